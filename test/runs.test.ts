// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { createRunRecorder } from '../lib/runs/index.ts';
import type { RunRecord } from '../lib/runs/record.ts';
import { webhookUrl } from '../lib/runs/webhook.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

const SECRET = 'trigger-secret-for-tests';
const silent = pino({ level: 'silent' });
const counters = { model_retry: 1, taxonomy_miss: 2, item_failure: 3, memo_heal: 4 };

function record(opId: string, status: RunRecord['status'], extra: Partial<RunRecord['result']> = {}): RunRecord {
  return {
    opId,
    status,
    startedAt: '2026-11-22T10:00:00.000Z',
    finishedAt: status === 'in_progress' ? null : '2026-11-22T10:01:00.000Z',
    result: { counts: { seen: 5, changed: 2 }, counters, ...extra },
  };
}

interface Received {
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  url: string;
}

/** A local receiver that answers with the given statuses in turn (0 = never answer). */
async function receiver(statuses: number[]): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  let i = 0;
  const server: Server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(data || '{}'), url: req.url ?? '' });
      const status = statuses[Math.min(i++, statuses.length - 1)]!;
      if (status === 0) return; // hang: the client's per-attempt timeout must fire
      res.writeHead(status, status === 503 ? { 'retry-after': '0' } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase();
});
test.after.each(() => t.dispose());

// A generous timeout: the attempts that should succeed must not time out on a loaded machine.
const fastRetry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 5_000 };

test('direct mode: one pipeline_runs row per invocation, in_progress then its terminal status', async () => {
  const opId = randomUUID();
  const runs = createRunRecorder({
    appUrl: null,
    pipelineTriggerSecret: null,
    bypassToken: null,
    db: t.db,
    log: silent,
  });
  await runs.start(record(opId, 'in_progress'));
  const started = await t.db.query<{ status: string }>('SELECT status FROM pipeline_runs WHERE op_id = $1', [opId]);
  assert.equal(started.rows, [{ status: 'in_progress' }]);
  await runs.finish(record(opId, 'completed', { extractor_version: 'sha-123' }));
  const { rows } = await t.db.query<{ status: string; result: RunRecord['result']; finished_at: unknown }>(
    'SELECT status, result, finished_at FROM pipeline_runs WHERE op_id = $1',
    [opId],
  );
  assert.is(rows.length, 1);
  assert.is(rows[0]!.status, 'completed');
  assert.ok(rows[0]!.finished_at !== null);
  assert.equal(rows[0]!.result, { counts: { seen: 5, changed: 2 }, counters, extractor_version: 'sha-123' });
});

test('direct mode: a failed run ends failed with its error, and no extractor_version key without IMAGE_SHA', async () => {
  const opId = randomUUID();
  const runs = createRunRecorder({
    appUrl: null,
    pipelineTriggerSecret: null,
    bypassToken: null,
    db: t.db,
    log: silent,
  });
  await runs.start(record(opId, 'in_progress'));
  await runs.finish(record(opId, 'failed', { error: 'corpus vanished' }));
  const { rows } = await t.db.query<{ status: string; result: Record<string, unknown> }>(
    'SELECT status, result FROM pipeline_runs',
  );
  assert.is(rows[0]!.status, 'failed');
  assert.is(rows[0]!.result.error, 'corpus vanished');
  assert.not.ok('extractor_version' in rows[0]!.result);
});

test('webhook: start and finish arrive with the bearer, the bypass header and the record', async () => {
  const app = await receiver([200]);
  try {
    const runs = createRunRecorder({
      appUrl: app.url,
      pipelineTriggerSecret: SECRET,
      bypassToken: 'bypass-1',
      db: t.db,
      log: silent,
      retry: fastRetry,
    });
    const opId = randomUUID();
    await runs.start(record(opId, 'in_progress'));
    await runs.finish(record(opId, 'completed', { extractor_version: 'sha-9' }));
    assert.is(app.received.length, 2);
    for (const r of app.received) {
      assert.is(r.url, '/api/internal/pipeline-runs/record');
      assert.is(r.headers.authorization, `Bearer ${SECRET}`);
      assert.is(r.headers['x-vercel-protection-bypass'], 'bypass-1');
      assert.is(r.body.op_id, opId);
    }
    assert.equal(
      app.received.map((r) => r.body.status),
      ['in_progress', 'completed'],
    );
    assert.is((app.received[1]!.body.result as Record<string, unknown>).extractor_version, 'sha-9');
    const direct = await t.db.query('SELECT 1 FROM pipeline_runs');
    assert.is(direct.rows.length, 0, 'with a web app the run is recorded there, not written directly');
  } finally {
    await app.close();
  }
});

test('webhook: 503 is retried until it succeeds; 401 is not retried; neither throws', async () => {
  const flaky = await receiver([503, 503, 200]);
  const refusing = await receiver([401]);
  try {
    const opId = randomUUID();
    const delivered = await createRunRecorder({
      appUrl: flaky.url,
      pipelineTriggerSecret: SECRET,
      bypassToken: null,
      db: t.db,
      log: silent,
      retry: fastRetry,
    }).finish(record(opId, 'completed'));
    assert.is(flaky.received.length, 3);
    assert.is(delivered, true);
    const refused = await createRunRecorder({
      appUrl: refusing.url,
      pipelineTriggerSecret: SECRET,
      bypassToken: null,
      db: t.db,
      log: silent,
      retry: fastRetry,
    }).finish(record(opId, 'completed'));
    assert.is(refusing.received.length, 1);
    assert.is(refused, true, 'a refusal is final: the record is not kept to be sent again');
  } finally {
    await flaky.close();
    await refusing.close();
  }
});

test('webhook: a receiver that never answers costs bounded attempts, and the failure is logged without the secret', async () => {
  const hanging = await receiver([0]);
  const lines: string[] = [];
  const log = pino(
    { level: 'warn' },
    new Writable({
      write(c, _e, done) {
        lines.push(String(c));
        done();
      },
    }),
  );
  try {
    const delivered = await createRunRecorder({
      appUrl: hanging.url,
      pipelineTriggerSecret: SECRET,
      bypassToken: null,
      db: t.db,
      log,
      retry: { ...fastRetry, timeoutMs: 200 },
    }).finish(record(randomUUID(), 'completed'));
    assert.is(hanging.received.length, fastRetry.attempts);
    assert.is(delivered, false, 'an undelivered record is reported, to be kept and sent again');
    assert.ok(lines.some((l) => l.includes('giving up') && l.includes('timed out')));
    assert.not.ok(lines.join('').includes(SECRET));
  } finally {
    await hanging.close();
  }
});

test('webhook: with the secret unset nothing is sent (fail closed)', async () => {
  const app = await receiver([200]);
  try {
    const runs = createRunRecorder({
      appUrl: app.url,
      pipelineTriggerSecret: null,
      bypassToken: null,
      db: t.db,
      log: silent,
      retry: fastRetry,
    });
    await runs.start(record(randomUUID(), 'in_progress'));
    assert.is(app.received.length, 0);
  } finally {
    await app.close();
  }
});

test('webhook URL', () => {
  assert.is(webhookUrl('https://app.example'), 'https://app.example/api/internal/pipeline-runs/record');
  assert.is(webhookUrl('https://app.example/base/'), 'https://app.example/base/api/internal/pipeline-runs/record');
});

test.run();
