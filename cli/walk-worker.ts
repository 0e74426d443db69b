// `ingest walk-worker [PATH]`: a worker of distributed walks (INGEST_WALK_MODE=distributed,
// docs/OPERATIONS.md "A walk on several machines"): a pure poller of its schema's walk_item queue, with no
// HTTP server, running INGEST_WALK_IN_FLIGHT items at once, one log line per item. It reads the
// items' bytes from the corpus bucket (INGEST_CORPUS_BUCKET) when one is configured; else PATH
// (else ENGINE_SOURCE_PATH) is the corpus as this machine mounts it, a shared volume. SIGTERM
// or SIGINT stops it: the items running are given up to 30 s, and pg-boss gives the rest to
// another worker.
// `ingest walk-worker health`: the container's health check, from the heartbeat file that a
// live event loop rewrites every half INGEST_WORKER_HEARTBEAT_MS.

import { parseArgs } from 'node:util';
import path from 'node:path';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { JobQueue, walkItemQueue } from '../lib/queue/job-queue.ts';
import { openLifespan } from '../engine/lifespan.ts';
import type { WalkItemJob } from '../engine/walk/distributed.ts';
import { WalkWorker } from '../engine/walk/walk-worker.ts';
import { BucketCorpus, MountedCorpus, type WorkerCorpus } from '../engine/walk/worker-corpus.ts';
import { openBucket } from '../lib/bucket/index.ts';
import { Heartbeat } from '../worker/heartbeat.ts';
import { heartbeatHealth } from './heartbeat-health.ts';
import { withTier1 } from './tier1.ts';
import { usageError } from './usage.ts';

export async function walkWorkerCommand(
  args: string[],
  { config, log }: { config: Config; log: Logger },
): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
  if (positionals.length > 1) throw usageError('ingest walk-worker takes at most one PATH');
  if (config.walk.mode !== 'distributed')
    throw usageError('ingest walk-worker works the items of distributed walks: set INGEST_WALK_MODE=distributed');
  const corpus = await workerCorpus(config, positionals[0], log);
  const stopRequested = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const lifespan = await withTier1(log, () => openLifespan(config, log)).catch((error: unknown) => {
    corpus.close();
    throw error;
  });
  try {
    const worker = new WalkWorker(lifespan, corpus);
    const name = await walkItemQueue(lifespan.db);
    const queue = await JobQueue.open(lifespan.db, {
      dsn: config.database.dsn!,
      supervise: true,
      superviseIntervalSeconds: config.walk.superviseSeconds,
      connectTimeoutMs: config.database.connectTimeoutMs,
      queues: [name],
      log,
    });
    const concurrency = config.walk.inFlight;
    const counts = { running: 0, done: 0, failed: 0 };
    const workerId = await queue.work<WalkItemJob>(name, { concurrency, pollingIntervalSeconds: 0.5 }, async (job) => {
      const started = Date.now();
      counts.running += 1;
      try {
        const outcome = await worker.run(job.data);
        counts[outcome.kind === 'failed' ? 'failed' : 'done'] += 1;
        log.info(
          { job: job.id, opId: job.data.opId, item: outcome.path, outcome: outcome.kind, ms: Date.now() - started },
          'walk item done',
        );
      } finally {
        counts.running -= 1;
      }
    });
    const heartbeat = new Heartbeat(config.walk.workerHeartbeatFile, config.worker.heartbeatMs);
    const beat = (state: 'polling' | 'stopping') => heartbeat.beat({ workerId, state, ...counts }, true);
    await beat('polling');
    const beating = setInterval(() => void beat('polling'), config.worker.heartbeatMs / 2);
    log.info({ concurrency, corpus: corpus.location, queue: name }, 'walk worker polling its queue');
    const signal = await stopRequested;
    log.info({ signal }, 'walk worker stopping');
    clearInterval(beating);
    await beat('stopping');
    await queue.stop();
  } finally {
    await lifespan.close();
    corpus.close();
  }
  return 0;
}

/** The bucket when one is configured (then no PATH is taken), else the corpus directory as mounted here. */
async function workerCorpus(config: Config, pathArg: string | undefined, log: Logger): Promise<WorkerCorpus> {
  const bucket = openBucket(config, log);
  if (bucket !== null) {
    if (pathArg !== undefined) {
      bucket.close();
      throw usageError('ingest walk-worker reads the corpus bucket (INGEST_CORPUS_BUCKET): it takes no PATH');
    }
    return BucketCorpus.open(bucket, config.walk.workerScratch, log);
  }
  const root = pathArg === undefined ? config.sourcePath : path.resolve(pathArg);
  if (root === null)
    throw usageError('ingest walk-worker needs the corpus: INGEST_CORPUS_BUCKET, PATH or ENGINE_SOURCE_PATH');
  return new MountedCorpus(root);
}

export async function walkWorkerHealthCommand(args: string[], { config }: { config: Config }): Promise<number> {
  parseArgs({ args, options: {}, allowPositionals: false });
  return heartbeatHealth('ingest walk-worker', config.walk.workerHeartbeatFile, config.worker.heartbeatMs);
}
