// `ingest worker [--concurrency N]`: the bid-worker, a pure poller of processing_queue with no
// HTTP server (docs/behaviour/stages.md#the-bid-worker). SIGTERM or SIGINT stops it gracefully
// (worker/loop.ts). `ingest worker health`: the container's health check, from the heartbeat file.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import type { Logger } from '../lib/log.ts';
import { Heartbeat } from '../worker/heartbeat.ts';
import { heartbeatHealth } from './heartbeat-health.ts';
import { jobHandlers } from '../worker/jobs.ts';
import { startWorker } from '../worker/loop.ts';
import { openWorkerRuntime } from '../worker/runtime.ts';
import { withTier1 } from './tier1.ts';
import { usageError } from './usage.ts';

export async function workerCommand(args: string[], { config, log }: { config: Config; log: Logger }): Promise<number> {
  const { values } = parseArgs({ args, options: { concurrency: { type: 'string' } }, allowPositionals: false });
  const concurrency = values.concurrency === undefined ? config.worker.concurrency : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256)
    throw usageError('--concurrency must be a whole number from 1 to 256');
  // Listened for from the start: a SIGTERM while the worker is still opening ends it cleanly too.
  const stopRequested = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal, graceMs: config.worker.graceMs }, 'bid-worker stopping');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  // The embedded database is one process's: `ingest worker` then holds it alone (docs/DECISIONS.md).
  const db = await openDatabase(config);
  const runtime = await withTier1(log, () =>
    openWorkerRuntime({ ...config, worker: { ...config.worker, concurrency } }, log),
  ).catch(async (error: unknown) => {
    await db.close();
    throw error;
  });
  const worker = startWorker(
    db,
    jobHandlers(runtime.deps),
    {
      ...config.worker,
      concurrency,
      prefetch: config.worker.prefetch ?? concurrency,
      heartbeat: new Heartbeat(config.worker.heartbeatFile, config.worker.heartbeatMs),
    },
    log,
    db.kind === 'pglite' ? () => openDatabase(config) : undefined,
  );
  log.info({ worker: worker.id, concurrency, database: db.kind }, 'bid-worker polling processing_queue');
  await stopRequested;
  try {
    await worker.stop();
  } finally {
    await runtime.close();
    await worker.db.close();
  }
  return 0;
}

export async function workerHealthCommand(args: string[], { config }: { config: Config }): Promise<number> {
  parseArgs({ args, options: {}, allowPositionals: false });
  return heartbeatHealth('ingest worker', config.worker.heartbeatFile, config.worker.heartbeatMs);
}
