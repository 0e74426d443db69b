// An admin merge as the CLI and the sidecar run it: inside the writer fence, since it moves
// rows and rewrites item memos that a walk of another process would be writing too.

import { embedTexts } from '../../stages/embed.ts';
import { mergeEntities, type MergeRequest, type MergeResult } from '../../stages/resolve/merge.ts';
import { writerFence } from '../trigger/fence.ts';
import type { Lifespan } from '../lifespan.ts';
import { IngestError } from '../../lib/errors.ts';

export class WriterFenceBusyError extends IngestError {
  constructor(where: string) {
    super('fence_busy', `another corpus writer holds the writer fence ${where}; try again when its walk ends`);
  }
}

export async function mergeUnderFence(lifespan: Lifespan, request: MergeRequest): Promise<MergeResult> {
  const { config, models } = lifespan;
  const fence = writerFence(config, lifespan.db);
  const hold = await fence.tryAcquire();
  if (hold === null) throw new WriterFenceBusyError(await fence.describe());
  try {
    const embed = (texts: string[]) => embedTexts(texts, { client: models.embedder, queue: models.queue });
    return await mergeEntities(hold.fenced(lifespan.db), lifespan.store, embed, request);
  } finally {
    await hold.release();
  }
}
