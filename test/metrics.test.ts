// @engine
// GET /metrics as a Prometheus scraper sees it: the real sidecar on loopback after a real walk
// of the example corpus and a real bid-worker job on the same database, read with fetch.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { startSidecar } from '../http/server.ts';
import { requireMetricsAccess } from '../http/access.ts';
import { HttpError } from '../http/errors.ts';
import { jobHandlers } from '../worker/jobs.ts';
import { startWorker } from '../worker/loop.ts';
import { enqueueJob, getJob } from '../worker/queue.ts';
import { openWorkerRuntime } from '../worker/runtime.ts';
import { openTestDatabase } from './helpers/db.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { stoppableDatabase } from './helpers/stoppable-database.ts';

const TRIGGER = 'metrics-test-trigger';

/** The value of one sample line, e.g. `ingest_walks_total{state="completed"}`. */
// Tier 1 as `ingest worker` and `ingest serve` start it, on this thread (the engine thread inherits it).
let tier: MockTier;
test.before(async () => {
  tier = await startMockTier();
});
test.after(async () => {
  await tier.stop();
});

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

test('after a walk and a job, /metrics names walks, items, model calls, stages, sink rows, converters and the queue', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-metrics-'));
  cpSync(path.resolve(import.meta.dirname, '..', 'examples', 'corpus'), path.join(root, 'corpus'), { recursive: true });
  const target = process.env.ENGINE_DB_DSN ? await openTestDatabase() : null;
  const config = loadConfig(
    {
      INGEST_DATA_DIR: path.join(root, 'data'),
      ENGINE_SOURCE_PATH: path.join(root, 'corpus'),
      PIPELINE_TRIGGER_SECRET: TRIGGER,
      INGEST_PORT: '0',
      INGEST_PRODUCER_AFTER_WALK: 'false',
      INGEST_LOG_LEVEL: 'silent',
      ...(target?.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
    },
    root,
  );
  const log = pino({ level: 'silent' });
  try {
    // A bid-worker job first: on the embedded database the worker and the sidecar take turns.
    const db = await openDatabase(config);
    const runtime = await openWorkerRuntime(config, log);
    const worker = startWorker(
      db,
      jobHandlers(runtime.deps),
      { concurrency: 1, leaseMs: 30_000, pollMs: 20, graceMs: 1_000, retryBaseMs: 10, retryMaxMs: 50 },
      log,
    );
    const id = randomUUID();
    await enqueueJob(db, { id, job: 'analyse_form', payload: { form: { path: 'company/faq.md' } } });
    while ((await getJob(db, id))?.status !== 'done') await new Promise((r) => setTimeout(r, 20));
    await worker.stop();
    // Queued once no worker runs, so it is the queue's depth when /metrics is read.
    await enqueueJob(db, { id: randomUUID(), job: 'template_fill', payload: { analysis_job: id } });
    await runtime.close();
    await db.close();

    const sidecar = await startSidecar(config, log);
    try {
      const headers = { authorization: `Bearer ${TRIGGER}`, 'content-type': 'application/json' };
      const { requestId } = (await (
        await fetch(`${sidecar.url}/walk`, { method: 'POST', headers, body: '{}' })
      ).json()) as {
        requestId: string;
      };
      let state: string;
      do {
        await new Promise((r) => setTimeout(r, 50));
        state = (
          (await (await fetch(`${sidecar.url}/walk-status/${requestId}`, { headers })).json()) as { state: string }
        ).state;
      } while (state === 'accepted' || state === 'running');
      assert.is(state, 'completed');

      const response = await fetch(`${sidecar.url}/metrics`);
      assert.is(response.status, 200);
      assert.match(response.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
      const text = await response.text();
      assert.is(sample(text, 'ingest_walks_total{state="completed"}'), 1);
      assert.is(sample(text, 'ingest_walk_items_total{outcome="changed"}'), 8);
      assert.is(sample(text, 'ingest_walk_items_total{outcome="failed"}'), 0);
      assert.ok(sample(text, 'ingest_model_calls_total{kind="embedding"}')! > 0, text);
      assert.ok(text.includes('# TYPE ingest_model_retries_total counter'));
      assert.is(sample(text, 'ingest_stage_duration_seconds_count{stage="convert"}'), 8);
      assert.is(sample(text, 'ingest_sink_rows_total{table="source_documents"}'), 8);
      assert.ok(text.includes('# TYPE ingest_converter_kills_total counter'));
      assert.is(sample(text, 'ingest_queue_jobs{job="analyse_form",status="done"}'), 1);
      assert.is(sample(text, 'ingest_queue_jobs{job="template_fill",status="queued"}'), 1, 'the queue depth');
      assert.ok(sample(text, 'process_cpu_seconds_total')! > 0, 'the process figures are there too');
      assert.is(sample(text, 'ingest_database_reachable'), 1);
    } finally {
      await sidecar.stop(5_000);
    }
  } finally {
    await target?.dispose();
    rmSync(root, { recursive: true, force: true });
  }
});

test('with the database gone, /metrics still answers and says so; back, it says that too', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-metrics-gone-'));
  const database = await stoppableDatabase(path.join(root, 'data'), root);
  const config = loadConfig(
    {
      INGEST_DATA_DIR: path.join(root, 'data'),
      PIPELINE_TRIGGER_SECRET: TRIGGER,
      INGEST_PORT: '0',
      INGEST_LOG_LEVEL: 'silent',
      ...database.env,
    },
    root,
  );
  const sidecar = await startSidecar(config, pino({ level: 'silent' }));
  const reachable = async () =>
    sample(await (await fetch(`${sidecar.url}/metrics`)).text(), 'ingest_database_reachable');
  try {
    assert.is(await reachable(), 1);
    await database.stop();
    assert.is(await reachable(), 0);
    if (process.env.ENGINE_DB_DSN) {
      // The embedded database stays gone for this process; a server comes back.
      await database.restart();
      assert.is(await reachable(), 1);
    }
  } finally {
    await sidecar.stop(5_000);
    await database.dispose();
    rmSync(root, { recursive: true, force: true });
  }
});

test('/metrics answers loopback peers; any other peer needs INGEST_METRICS_TOKEN as its bearer', () => {
  const request = (remoteAddress: string, authorization?: string) => ({
    socket: { remoteAddress },
    headers: authorization === undefined ? {} : { authorization },
  });
  const refusal = (run: () => void) => {
    try {
      run();
      return null;
    } catch (error) {
      return [(error as HttpError).status, (error as HttpError).error];
    }
  };
  assert.is(
    refusal(() => requireMetricsAccess(request('127.0.0.1') as never, null)),
    null,
  );
  assert.is(
    refusal(() => requireMetricsAccess(request('::ffff:127.0.0.1') as never, 'token')),
    null,
  );
  assert.equal(
    refusal(() => requireMetricsAccess(request('10.1.2.3') as never, null)),
    [403, 'loopback_only'],
  );
  assert.equal(
    refusal(() => requireMetricsAccess(request('10.1.2.3', 'Bearer wrong') as never, 'token')),
    [401, 'unauthorized'],
  );
  assert.is(
    refusal(() => requireMetricsAccess(request('10.1.2.3', 'Bearer token') as never, 'token')),
    null,
  );
});

test.run();
