// An admin merge as the CLI and the sidecar run it: inside the writer fence, since it moves
// rows and rewrites item memos that a walk of another process would be writing too.

import { randomUUID } from 'node:crypto';
import { emptyRunCounters, inRunContext, type RunContext } from '../../lib/run-context.ts';
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
  // Its events (a model retry) count into a run context of its own, never the last walk's; its
  // log line carries them (lib/run-context.ts).
  const run: RunContext = { opId: randomUUID(), fullReprocess: false, counters: emptyRunCounters() };
  try {
    const embed = (texts: string[]) => embedTexts(texts, { client: models.embedder, queue: models.queue });
    const result = await inRunContext(run, () =>
      mergeEntities(hold.fenced(lifespan.db), lifespan.store, embed, request),
    );
    lifespan.log.info({ ...result, counters: run.counters }, 'entity merge done');
    return result;
  } finally {
    await hold.release();
  }
}
