// The engine worker thread of `ingest serve` (DESIGN.md 4): it owns the database pool, the
// state store, the converters and the model clients, so a heavy walk never stalls /health or
// /extract on the main thread. Boot only enters the lifespan (SPEC.md 1 rules 5 and 6): it
// opens the engine and waits; walks start only when the main thread asks.
//
// Each walk runs inside the writer fence: taken before the pass, released after, never taken
// twice (SPEC.md 4 rule 1). A busy fence ends the request as fence_busy with no pass. Inside
// the fence, pull-sync materialises the corpus from its bucket before the pass.

import { parentPort, workerData } from 'node:worker_threads';
import { syncCorpus } from '../lib/bucket/pull-sync.ts';
import type { Config } from '../lib/config.ts';
import { walk } from './walk.ts';
import { createLogger } from '../lib/log.ts';
import type { FailStage5Mode } from '../lib/failure-directive.ts';
import { tryAcquireFence } from './fence.ts';
import { openEngine } from './lifespan.ts';

export type ToEngine =
  | { type: 'walk'; requestId: string; fullReprocess: boolean; failStage5: FailStage5Mode | null }
  | { type: 'shutdown' };

export type FromEngine =
  | { type: 'ready' }
  | { type: 'walk-running'; requestId: string }
  | { type: 'walk-done'; requestId: string; state: 'completed' | 'failed' | 'fence_busy'; opId?: string; counts?: Record<string, number>; stage5FailureInjected?: string; error?: string };

const port = parentPort!;
const post = (message: FromEngine) => port.postMessage(message);
// The main thread's configuration, parsed once there (so --port and friends agree).
const config = workerData as Config;
const log = createLogger(config).child({ thread: 'engine' });
const engine = await openEngine(config, log);
post({ type: 'ready' });

// The walk in progress, so that shutdown lets it finish (within the main thread's grace).
let current: Promise<void> = Promise.resolve();
port.on('message', (message: ToEngine) => {
  if (message.type === 'shutdown') {
    void current.then(() => engine.close()).finally(() => port.close());
    return;
  }
  current = runWalk(message);
});

const prefixed = (prefix: string, counts: object) => Object.fromEntries(Object.entries(counts).map(([k, n]) => [prefix + k, n as number]));

async function runWalk({ requestId, fullReprocess, failStage5 }: Extract<ToEngine, { type: 'walk' }>): Promise<void> {
  const hold = await tryAcquireFence(config.stateStorePath).catch((error: unknown) => {
    log.error({ err: error, requestId }, 'could not read the writer fence');
    return null;
  });
  if (hold === null) {
    post({ type: 'walk-done', requestId, state: 'fence_busy' });
    return;
  }
  try {
    post({ type: 'walk-running', requestId });
    const synced = await syncCorpus(config, config.sourcePath, log);
    const summary = await walk(engine, { fullReprocess, failStage5 });
    post({
      type: 'walk-done', requestId, state: summary.status, opId: summary.opId,
      counts: { ...summary.items, ...prefixed('rows_', summary.rows), ...(synced === null ? {} : prefixed('sync_', synced)) },
      ...(failStage5 === null ? {} : { stage5FailureInjected: failStage5 }),
      ...(summary.error === undefined ? {} : { error: summary.error }),
    });
  } catch (error) {
    log.error({ err: error, requestId }, 'walk threw');
    post({ type: 'walk-done', requestId, state: 'failed', error: (error as Error).message });
  } finally {
    await hold.release();
  }
}
