// `ingest reembed [--json]`: every vector made again by the configured embedding model, then
// that model recorded (engine/admin/reembed.ts), so that walks and searches with it may run.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { reembedUnderFence } from '../engine/admin/reembed.ts';
import { withTier1 } from './tier1.ts';

export async function reembedCommand(
  args: string[],
  { config, log }: { config: Config; log: Logger },
): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  const lifespan = await withTier1(log, () => openLifespan(config, log));
  try {
    const r = await reembedUnderFence(lifespan);
    process.stdout.write(
      values.json
        ? `${JSON.stringify(r)}\n`
        : `reembedded with ${r.model} (the vectors were of ${r.from ?? 'no model: none yet'}): ` +
            `${r.owners} owners and ${r.roots} entity roots, ${r.textsEmbedded} texts sent; ` +
            `${r.ownersAlreadyDone} owners done by an earlier run, ${r.ownersDeleted} rows of no owner or text deleted\n`,
    );
    return 0;
  } finally {
    await lifespan.close();
  }
}
