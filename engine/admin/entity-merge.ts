// An admin merge as the CLI and the sidecar run it: inside the writer fence, since it moves
// rows and rewrites item memos that a walk of another process would be writing too.

import { mkdir } from 'node:fs/promises';
import { embedTexts } from '../../stages/embed.ts';
import { mergeEntities, type MergeRequest, type MergeResult } from '../../stages/resolve/merge.ts';
import { tryAcquireFence } from '../trigger/fence.ts';
import type { Lifespan } from '../lifespan.ts';
import { IngestError } from '../../lib/errors.ts';

export class WriterFenceBusyError extends IngestError {
  constructor(stateDir: string) {
    super('fence_busy', `another corpus writer holds the writer fence in ${stateDir}; try again when its walk ends`);
  }
}

export async function mergeUnderFence(lifespan: Lifespan, request: MergeRequest): Promise<MergeResult> {
  const { config, models } = lifespan;
  await mkdir(config.stateStorePath, { recursive: true });
  const hold = await tryAcquireFence(config.stateStorePath, config.fenceStaleMs);
  if (hold === null) throw new WriterFenceBusyError(config.stateStorePath);
  try {
    const embed = (texts: string[]) => embedTexts(texts, { client: models.embedder, queue: models.queue });
    return await mergeEntities(lifespan.db, lifespan.store, embed, request);
  } finally {
    await hold.release();
  }
}
