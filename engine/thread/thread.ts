// The engine worker thread of `ingest serve` (docs/ARCHITECTURE.md#layers): it owns the database
// pool, the state store, the converters and the model clients, so a heavy walk never stalls /health
// or /extract on the main thread. Boot only enters the lifespan
// (docs/behaviour/stages.md#boot-never-walks): it opens the lifespan and waits; walks start only
// when the main thread asks.
//
// Each walk is the fenced walk (engine/trigger/fenced-walk.ts, docs/behaviour/routes.md#post-walk): a busy fence
// ends the request as fence_busy with no pass; a fence that cannot be read fails it, with the
// reason.

import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../lib/config.ts';
import { walk } from '../walk/walk.ts';
import type { WalkFlags } from '../walk/walk-options.ts';
import { createLogger } from '../../lib/log.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import { fencedWalk } from '../trigger/fenced-walk.ts';
import { openLifespan } from '../lifespan.ts';
import { ProducerBusyError } from '../producer/producer.ts';
import type { RunWarning } from '../../lib/runs/record.ts';
import { walkCounts } from '../walk/tally.ts';
import { mergeUnderFence } from '../admin/entity-merge.ts';
import type { MergeRequest, MergeResult } from '../../stages/resolve/merge.ts';
import { metrics, registry } from '../../lib/metrics.ts';
import { jobCountsByWalk, walkItemQueue } from '../../lib/queue/job-queue.ts';
import type { StageObserver } from '../item/at-stage.ts';
import { WriteTurns } from './write-turns.ts';
import { IngestError } from '../../lib/errors.ts';
import { isDatabaseUnavailable } from '../../lib/db/database.ts';

export type ToEngine =
  | { type: 'walk'; requestId: string; flags: WalkFlags; failStage5: FailStage5Mode | null }
  | { type: 'merge'; requestId: string; request: MergeRequest }
  | { type: 'produce'; requestId: string; redraft: boolean }
  | { type: 'metrics'; requestId: string }
  | { type: 'shutdown' };

export type FromEngine =
  | { type: 'ready' }
  | { type: 'walk-running'; requestId: string }
  | {
      type: 'walk-done';
      requestId: string;
      state: 'completed' | 'failed' | 'fence_busy';
      opId?: string;
      counts?: Record<string, number>;
      stage5FailureInjected?: string;
      stage5DirectiveConsumed?: string;
      warnings?: RunWarning[];
      error?: string;
    }
  | {
      type: 'merge-done';
      requestId: string;
      result?: MergeResult;
      /** A named refusal (EntityMergeError, WriterFenceBusyError) or, without a code, a failure. */
      error?: { code?: string; message: string };
    }
  /** A producer run asked for: started (its op_id), or refused because one is going. */
  | { type: 'produce-started'; requestId: string; opId: string }
  | { type: 'produce-refused'; requestId: string; busy: boolean; message: string }
  /** This thread's metrics in the Prometheus text format, for GET /metrics. */
  | { type: 'metrics-text'; requestId: string; text: string };

const port = parentPort!;
const post = (message: FromEngine) => port.postMessage(message);
// The main thread's configuration, parsed once there (so --port and friends agree).
const config = workerData as Config;
const log = createLogger(config).child({ thread: 'engine' });
const lifespan = await openLifespan(config, log);
/** Every walk of this thread times its stages into the metrics (GET /metrics). */
const observeStage: StageObserver = (stage, milliseconds) =>
  metrics.stageSeconds.observe({ stage }, milliseconds / 1000);
post({ type: 'ready' });
// A run owed since before this process last stopped (a walk or a run killed, a walk that failed).
if (config.producer.afterWalk)
  void lifespan.producer.runWanted().catch((error: unknown) => log.warn({ err: error }, 'producer: no run at boot'));

// One write at a time, and shutdown lets the one in progress finish (within the main thread's grace).
const writes = new WriteTurns();
port.on('message', (message: ToEngine) => {
  if (message.type === 'shutdown') {
    void writes
      .idle()
      .then(() => lifespan.close())
      .finally(() => port.close());
    return;
  }
  // The producer runs beside the walks, under its own lock
  // (docs/behaviour/states.md#writer-fence-and-single-flight).
  if (message.type === 'produce') return void produceOnRequest(message);
  // A scrape is answered while a walk runs, never queued behind it.
  if (message.type === 'metrics') return void metricsOnRequest(message.requestId);
  // One write at a time: a merge waits for the walk in progress, and the next walk for it.
  writes.queue(() => (message.type === 'walk' ? walkOnRequest(message) : mergeOnRequest(message)));
});

async function mergeOnRequest({ requestId, request }: Extract<ToEngine, { type: 'merge' }>): Promise<void> {
  try {
    post({ type: 'merge-done', requestId, result: await mergeUnderFence(lifespan, request) });
  } catch (error) {
    // A named refusal (mention_not_found, fence_busy, ...) is the client's answer; anything else is logged.
    const named = error instanceof IngestError;
    if (!named) log.error({ err: error, requestId }, 'entity merge failed');
    post({
      type: 'merge-done',
      requestId,
      error: { ...(named ? { code: error.code } : {}), message: (error as Error).message },
    });
  }
}

/** POST /producer-run: every concept, bypassing the delta gate; answered as soon as it holds its locks. */
async function produceOnRequest({ requestId, redraft }: Extract<ToEngine, { type: 'produce' }>): Promise<void> {
  try {
    const run = lifespan.producer.start({ all: true, redraft });
    run.done.catch((error: unknown) => {
      if (!(error instanceof ProducerBusyError)) log.error({ err: error, requestId }, 'producer run ended in error');
    });
    await run.started;
    post({ type: 'produce-started', requestId, opId: run.opId });
  } catch (error) {
    const busy = error instanceof ProducerBusyError;
    if (!busy) log.error({ err: error, requestId }, 'producer run did not start');
    post({ type: 'produce-refused', requestId, busy, message: (error as Error).message });
  }
}

async function metricsOnRequest(requestId: string): Promise<void> {
  // The queue gauge reads the database; a scrape while it is down still gets the rest, and says so.
  try {
    await measureQueue();
    metrics.databaseReachable.set(1);
  } catch (error) {
    const gone = isDatabaseUnavailable(error);
    metrics.databaseReachable.set(gone ? 0 : 1);
    if (gone) log.error({ err: error }, 'metrics: the database cannot be reached');
    else log.warn({ err: error }, 'metrics: the queue could not be read');
  }
  post({ type: 'metrics-text', requestId, text: await registry.metrics() });
}

/** processing_queue's jobs by kind and status, and a distributed walk's, from this thread's database, into the gauges. */
async function measureQueue(): Promise<void> {
  metrics.queueJobs.reset();
  const { rows } = await lifespan.db.query<{ job: string; status: string; jobs: number }>(
    'SELECT job, status, count(*)::int AS jobs FROM processing_queue GROUP BY job, status',
  );
  for (const { job, status, jobs } of rows) metrics.queueJobs.set({ job, status }, jobs);
  if (config.walk.mode !== 'distributed') return;
  metrics.walkItemJobs.reset();
  const counts = await jobCountsByWalk(lifespan.db, await walkItemQueue(lifespan.db));
  for (const { walk, state, jobs } of counts) metrics.walkItemJobs.set({ walk, state }, jobs);
}

/** One walk request: the fenced walk on the open lifespan, and its terminal state posted back. */
async function walkOnRequest({ requestId, flags, failStage5 }: Extract<ToEngine, { type: 'walk' }>): Promise<void> {
  try {
    const onHeld = () => post({ type: 'walk-running', requestId });
    const summary = await fencedWalk(
      config,
      { db: lifespan.db, sourcePath: config.sourcePath, log, runs: lifespan.runs, onHeld },
      (sync, fence) => walk(lifespan, { ...flags, failStage5, sync, fence, observeStage }),
    );
    // A walk consumes an armed directive whatever becomes of it
    // (docs/behaviour/states.md#failure-directive), and says so.
    const consumed = failStage5 === null ? {} : { stage5DirectiveConsumed: failStage5 };
    if (summary === null) {
      metrics.walks.inc({ state: 'fence_busy' });
      post({ type: 'walk-done', requestId, state: 'fence_busy', ...consumed });
      return;
    }
    metrics.walks.inc({ state: summary.status });
    for (const [outcome, n] of Object.entries(summary.items)) if (outcome !== 'seen') metrics.items.inc({ outcome }, n);
    post({
      type: 'walk-done',
      requestId,
      state: summary.status,
      opId: summary.opId,
      counts: walkCounts(summary),
      ...consumed,
      ...(summary.stage5FailureInjected === undefined ? {} : { stage5FailureInjected: summary.stage5FailureInjected }),
      ...(summary.warnings.length === 0 ? {} : { warnings: summary.warnings }),
      ...(summary.error === undefined ? {} : { error: summary.error }),
    });
  } catch (error) {
    log.error({ err: error, requestId }, 'walk threw');
    metrics.walks.inc({ state: 'failed' });
    post({ type: 'walk-done', requestId, state: 'failed', error: (error as Error).message });
  }
}
