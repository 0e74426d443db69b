// `ingest entities list | show | merge`: what stage 5 (i) made of the corpus's entities, and the
// admin merge for operators (the platform normally merges through POST /entities/merge).

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { mergeUnderFence } from '../engine/admin/entity-merge.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { withTier1 } from './tier1.ts';
import { listEntities, showEntity } from '../stages/resolve/inspect.ts';
import { noMentionMessage } from '../stages/resolve/merge.ts';
import { usageError } from './usage.ts';
import { withDatabase } from './with-database.ts';

interface Context {
  config: Config;
  log: Logger;
}

export async function entitiesListCommand(args: string[], { config }: Context): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      pinned: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      limit: { type: 'string', default: '100' },
    },
  });
  const limit = Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) throw usageError('--limit must be a whole number >= 1');
  const entities = await withDatabase(config, (db) => listEntities(db, { pinned: values.pinned, limit }));
  if (values.json) {
    process.stdout.write(`${JSON.stringify(entities)}\n`);
    return 0;
  }
  const lines = entities.map(
    (e) =>
      `${e.mention}  ${String(e.mentions).padStart(8)} ${String(e.owners).padStart(6)}  ${e.pinned ? 'pinned' : '      '}  ${e.entity_type.padEnd(12)} ${e.canonical_name}`,
  );
  process.stdout.write(
    `${'a mention'.padEnd(36)}  mentions owners          type         canonical name\n${lines.join('\n')}\n`,
  );
  return 0;
}

export async function entitiesShowCommand(args: string[], { config }: Context): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw usageError('give one entity mention id');
  const entity = await withDatabase(config, (db) => showEntity(db, positionals[0]!));
  if (entity === null) {
    process.stderr.write(`ingest: ${noMentionMessage([positionals[0]!])}\n`);
    return 1;
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(entity)}\n`);
    return 0;
  }
  const mentions = entity.mentions.map(
    (m) => `  ${m.id}  ${m.pinned ? 'pinned ' : '       '}${m.owner}  "${m.surface_form}"`,
  );
  process.stdout.write(
    `${entity.entity_type} ${entity.canonical_name}\n` +
      `names that chain under it: ${entity.names.join(', ') || '(none recorded)'}\n` +
      `mentions (${entity.mentions.length}):\n${mentions.join('\n')}\n`,
  );
  return 0;
}

export async function entitiesMergeCommand(args: string[], { config, log }: Context): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { into: { type: 'string' } },
    allowPositionals: true,
  });
  if (values.into === undefined || positionals.length === 0)
    throw usageError('give --into <mention id> and at least one mention id to merge into it');
  const lifespan = await withTier1(log, () => openLifespan(config, log));
  try {
    const result = await mergeUnderFence(lifespan, { into: values.into, mentions: positionals });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    // The merge committed either way; a failed pin step still needs the operator's eye.
    return result.mentions_pin_error === undefined ? 0 : 1;
  } finally {
    await lifespan.close();
  }
}
