// An admin merge as the CLI and the sidecar run it: inside the writer fence, since it moves
// rows and rewrites item memos that a walk of another process would be writing too.

import { assertEmbeddingModel } from '../../lib/embed/recorded-model.ts';
import { textEmbedder } from '../../stages/embed.ts';
import { mergeEntities, type MergeRequest, type MergeResult } from '../../stages/resolve/merge.ts';
import type { Lifespan } from '../lifespan.ts';
import { underWriterFence } from './under-fence.ts';

export async function mergeUnderFence(lifespan: Lifespan, request: MergeRequest): Promise<MergeResult> {
  const { models } = lifespan;
  const embed = textEmbedder({ client: models.embedder, queue: models.queue });
  const { result, counters } = await underWriterFence(lifespan, async (db) => {
    // It embeds the surviving root's name: with another model than the database's, its vector would not compare.
    await assertEmbeddingModel(db, embed.model);
    return mergeEntities(db, lifespan.store, embed, request);
  });
  lifespan.log.info({ ...result, counters }, 'entity merge done');
  return result;
}
