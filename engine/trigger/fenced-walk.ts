// A walk as POST /walk and `ingest walk` run it (docs/behaviour/routes.md#post-walk): the writer
// fence, then pull-sync of the corpus from its bucket, then one pass, all inside the one fence
// hold, which the pass never takes again. A busy fence skips the pass: the caller reports
// fence_busy (the sidecar) or says who holds it (the command). Either way, and when pull-sync
// fails, the invocation leaves its one pipeline_runs row (engine/walk/run-record.ts); the pass records its own.

import { syncCorpus, type SyncReport } from '../../lib/bucket/pull-sync.ts';
import type { Config } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import type { Logger } from '../../lib/log.ts';
import type { RunRecorder } from '../../lib/runs/record.ts';
import { writerFence, type FenceHold } from '../walk/fence.ts';
import { recordUnwalked } from '../walk/run-record.ts';
import { walk, type WalkSummary } from '../walk/walk.ts';
import type { WalkOptions } from '../walk/walk-options.ts';
import type { Lifespan } from '../lifespan.ts';

export interface FencedWalkOptions {
  /** The database the walk writes: on PostgreSQL the fence is a lease in it (engine/walk/fence.ts). */
  db: Database;
  sourcePath: string | null;
  log: Logger;
  /** Where an invocation that never reaches its pass is recorded. */
  runs: RunRecorder;
  /** Told once the fence is held, before pull-sync: the walk has begun. */
  onHeld?: () => void;
}

/** Runs `pass` inside the writer fence after pull-sync; null, with no pass, when the fence is busy. */
export async function fencedWalk(
  config: Config,
  { db, sourcePath, log, runs, onHeld }: FencedWalkOptions,
  pass: (sync: SyncReport | null, fence: FenceHold) => Promise<WalkSummary>,
): Promise<WalkSummary | null> {
  const hold = await writerFence(config, db).tryAcquire();
  if (hold === null) {
    await recordUnwalked(runs, config, 'fence_busy');
    return null;
  }
  try {
    onHeld?.();
    const sync = await syncCorpus(config, sourcePath, log).catch(async (error: unknown) => {
      await recordUnwalked(runs, config, 'failed', `pull-sync failed: ${(error as Error).message}`);
      throw error;
    });
    return await pass(sync, hold);
  } finally {
    await hold.release();
  }
}

export type WalkFlags = Pick<
  WalkOptions,
  'fullReprocess' | 'readScans' | 'allowMassRemoval' | 'rebindCorpus' | 'onProgress' | 'feedUrls'
>;

/**
 * One walk of `sourcePath` by a corpus writer of this process (`ingest walk`, `ingest watch`):
 * the fenced walk on an open lifespan; null when another writer holds the fence.
 */
export function fencedCorpusWalk(
  lifespan: Lifespan,
  sourcePath: string | null,
  flags: WalkFlags = {},
): Promise<WalkSummary | null> {
  const { config, db, log, runs } = lifespan;
  return fencedWalk(config, { db, sourcePath, log, runs }, (sync, fence) =>
    walk(lifespan, { ...flags, sourcePath, sync, fence }),
  );
}
