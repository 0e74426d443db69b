// The entity-alias snapshot (docs/behaviour/stages.md#lifespan,
// docs/behaviour/states.md#curation-pins). Generated in the engine lifespan and refreshed at the
// start of every walk (an admin merge may land between walks): for each admin-curated (pinned)
// entity mention, its surface form, its canonical name and any metadata.aliases, each mapped to the
// curated canonical name. Fresh extractions pass through it, so a new mention of a curated entity
// chains under the curated canonical (and key) instead of minting a rival one.

import type { Queryable } from './db/database.ts';
import { pinnedMention } from './db/tables.ts';

/** Case, width and spacing variants of one name meet on one key. */
const normalise = (name: string) => name.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
const keyOf = (entityType: string, name: string) => `${entityType}\u0000${normalise(name)}`;

export class AliasSnapshot {
  #byAlias = new Map<string, string>();

  get size(): number {
    return this.#byAlias.size;
  }

  /** The curated canonical name for this name of this type, if curation named one. */
  canonicalFor(entityType: string, name: string): string | undefined {
    return this.#byAlias.get(keyOf(entityType, name));
  }

  /** Reads the pinned mentions anew; the snapshot is replaced whole, never half-updated. */
  async refresh(db: Queryable): Promise<void> {
    const { rows } = await db.query<{
      entity_type: string;
      canonical_name: string;
      surface_form: string;
      aliases: unknown;
    }>(
      `SELECT entity_type, canonical_name, surface_form, metadata -> 'aliases' AS aliases
         FROM entity_mentions
        WHERE ${pinnedMention()}
        ORDER BY updated_at, id`,
    );
    const next = new Map<string, string>();
    for (const row of rows) {
      const aliases = Array.isArray(row.aliases) ? row.aliases.filter((a): a is string => typeof a === 'string') : [];
      for (const name of [row.canonical_name, row.surface_form, ...aliases])
        next.set(keyOf(row.entity_type, name), row.canonical_name);
    }
    this.#byAlias = next;
  }
}
