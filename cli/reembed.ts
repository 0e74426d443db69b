// `ingest reembed [--batch N] [--json]`: every vector made again by the configured embedding model, then
// that model recorded (engine/admin/reembed.ts), so that walks and searches with it may run.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { REEMBED_BATCH, reembedUnderFence } from '../engine/admin/reembed.ts';
import { withTier1 } from './tier1.ts';
import { usageError } from './usage.ts';

export async function reembedCommand(
  args: string[],
  { config, log }: { config: Config; log: Logger },
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { batch: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const batch = values.batch === undefined ? REEMBED_BATCH : Number(values.batch);
  if (!Number.isSafeInteger(batch) || batch < 1 || batch > 10_000)
    throw usageError('--batch must be a whole number from 1 to 10000');
  const lifespan = await withTier1(log, () => openLifespan(config, log));
  try {
    const r = await reembedUnderFence(lifespan, batch);
    const nothing = r.from === r.model && r.owners + r.ownersAlreadyDone + r.roots === 0;
    process.stdout.write(
      values.json
        ? `${JSON.stringify(r)}\n`
        : nothing
          ? `the vectors are of ${r.model} already: nothing to re-embed\n`
          : `reembedded with ${r.model} (the vectors were of ${r.from ?? 'no model: none yet'}): ` +
            `${r.owners} owners and ${r.roots} entity roots, ${r.textsEmbedded} texts sent; ` +
            `${r.ownersAlreadyDone} owners done by an earlier run, ${r.ownersDeleted} rows of no owner or text deleted\n`,
    );
    return 0;
  } finally {
    await lifespan.close();
  }
}
