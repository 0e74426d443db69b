// An admin operation (an entity merge, a reembed) as the CLI and the sidecar run it: inside the
// writer fence, since it rewrites rows that a walk of another process would be writing too, and
// in a run context of its own, so that its events (a model retry) never count into the last
// walk's (lib/run-context.ts); its log line carries them.

import { randomUUID } from 'node:crypto';
import type { Database } from '../../lib/db/database.ts';
import { IngestError } from '../../lib/errors.ts';
import { emptyRunCounters, inRunContext, type RunCounters } from '../../lib/run-context.ts';
import type { Lifespan } from '../lifespan.ts';
import { writerFence } from '../walk/fence.ts';

export class WriterFenceBusyError extends IngestError {
  constructor(where: string) {
    super('fence_busy', `another corpus writer holds the writer fence ${where}; try again when its walk ends`);
  }
}

/** Runs `work` on the fenced database; `opId` is its run's, `counters` what it counted. */
export async function underWriterFence<T>(
  lifespan: Lifespan,
  work: (db: Database, opId: string) => Promise<T>,
): Promise<{ result: T; counters: RunCounters }> {
  const fence = writerFence(lifespan.config, lifespan.db);
  const hold = await fence.tryAcquire();
  if (hold === null) throw new WriterFenceBusyError(await fence.describe());
  const run = { opId: randomUUID(), fullReprocess: false, counters: emptyRunCounters() };
  try {
    const result = await inRunContext(run, () => work(hold.fenced(lifespan.db), run.opId));
    return { result, counters: run.counters };
  } finally {
    await hold.release();
  }
}
