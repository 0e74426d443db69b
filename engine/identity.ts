// source_documents identity (SPEC.md 2, DESIGN.md 7): content hash first (the same bytes at a
// new path are the same document), then the relative path (an edited file keeps its id),
// else a new id is minted and stored. Items of one walk that carry the same bytes share the
// resolution in flight, so two copies admitted together cannot mint two ids.

import type { Database } from '../lib/db/database.ts';
import { mintSourceDocumentId } from '../lib/ids.ts';

export class DocumentIdentity {
  readonly #db: Database;
  readonly #inFlight = new Map<string, Promise<string>>();

  constructor(db: Database) {
    this.#db = db;
  }

  resolve(sha256: string, relPath: string): Promise<string> {
    let pending = this.#inFlight.get(sha256);
    if (pending === undefined) {
      pending = this.#lookup(sha256, relPath);
      this.#inFlight.set(sha256, pending);
      // A failed lookup must not poison later items with the same bytes.
      pending.catch(() => this.#inFlight.delete(sha256));
    }
    return pending;
  }

  /** Called once the document's row is durable: from then on the database answers. */
  settled(sha256: string): void {
    this.#inFlight.delete(sha256);
  }

  async #lookup(sha256: string, relPath: string): Promise<string> {
    const byHash = await this.#db.query<{ id: string }>(
      'SELECT id FROM source_documents WHERE content_sha256 = $1 ORDER BY created_at, id LIMIT 1',
      [sha256],
    );
    if (byHash.rows[0] !== undefined) return byHash.rows[0].id;
    const byPath = await this.#db.query<{ id: string }>(
      'SELECT id FROM source_documents WHERE rel_path = $1 ORDER BY updated_at DESC, id LIMIT 1',
      [relPath],
    );
    return byPath.rows[0]?.id ?? mintSourceDocumentId();
  }
}
