// @engine
// A distributed walk (INGEST_WALK_MODE=distributed, engine/walk/distributed.ts) on PostgreSQL:
// `ingest walk` as the coordinator and three `ingest walk-worker` processes, all real processes
// on one mock model server with a fixed URL, under a role without CREATE. It leaves every table
// equal, in content terms, to a walk in one process of the same corpus, reports the same counts,
// and a re-walk makes no model call and writes no row whichever worker ran which item.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { mockTierEnv } from './helpers/mock-tier.ts';
import { startWalkWorkers, stopWalkWorkers } from '../bench/walk-workers.ts';
import { serveHttp, type LoopbackServer } from './helpers/loopback.ts';
import { BIN, generateCorpus } from './helpers/corpus.ts';
import { rowsInContentTerms, WALKED_TABLES } from './helpers/content.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { createNoCreateRole } from './helpers/no-create-role.ts';
import { pino } from 'pino';
import { sha256Hex } from '../lib/hash.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { walkCounts } from '../engine/walk/tally.ts';
import type { WalkItemJob } from '../engine/walk/distributed.ts';
import { WEBHOOK_PATH } from '../lib/runs/webhook.ts';
import { JobQueue, walkItemQueue } from '../lib/queue/job-queue.ts';

const DOCS = 40;
const WORKERS = 3;
/** Passed feed URLs beside the files: one page, and one that answers 404 (an item's own failure). */
const URLS = ['/article', '/missing'];
const ARTICLE =
  '<!doctype html><html><head><title>Engines</title></head><body><article><h1>Engines</h1>' +
  `<p>${'Ada Lovelace and Charles Babbage met in London to talk about the engine. '.repeat(20)}</p></article></body></html>`;

let root: string;
let corpus: string;
let mock: MockServer;
let pages: LoopbackServer;
/** The pipeline-run webhooks the sidecar test's deployment sent (the page server answers them). */
const webhooks: RunRecordBody[] = [];
interface RunRecordBody {
  op_id: string;
  status: string;
  result: { counts: Record<string, number>; counters: Record<string, number> };
}
const disposals: (() => Promise<void>)[] = [];

if (targetEngine === 'postgres') {
  test.before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'ingest-distributed-'));
    corpus = path.join(root, 'corpus');
    generateCorpus(corpus, DOCS, { mix: 'md:60,html:20,docx:20', seed: 7 });
    mock = await startMockServer();
    pages = await serveHttp((req, res) => {
      if (req.url === WEBHOOK_PATH) {
        let body = '';
        req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        req.on('end', () => {
          webhooks.push(JSON.parse(body) as RunRecordBody);
          res.writeHead(200).end();
        });
      } else if (req.url === '/article')
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ARTICLE);
      else res.writeHead(404, { 'content-type': 'text/html' }).end('not found');
    });
  });
  test.after(async () => {
    for (const dispose of disposals.reverse()) await dispose();
    await mock.close();
    await pages.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** A deployment of its own: a database (reached as a role without CREATE) and a data directory. */
  async function deployment(name: string, extra: Record<string, string> = {}) {
    const t: TestDatabase = await openTestDatabase();
    const role = await createNoCreateRole(t.dsn!);
    disposals.push(
      () => t.dispose(),
      () => role.dispose(),
    );
    for (const page of URLS)
      await t.db.query('INSERT INTO feed_articles (id, url, title, passed) VALUES ($1::uuid, $2, $3, true)', [
        randomUUID(),
        `${pages.origin}${page}`,
        page,
      ]);
    const env = {
      PATH: process.env.PATH ?? '',
      INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32',
      ENGINE_DB_DSN: role.dsn,
      INGEST_DATA_DIR: path.join(root, name),
      INGEST_LOG_LEVEL: 'warn',
      INGEST_PRODUCER_AFTER_WALK: 'false',
      ...mockTierEnv(mock.url),
      ...extra,
    };
    return { db: t.db, env };
  }

  /** `ingest walk --json` (spawned, not run synchronously: the mock answers from this process). */
  async function walk(env: Record<string, string>, source = corpus): Promise<WalkSummary> {
    const child = spawn(process.execPath, [BIN, 'walk', source, '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.is(code, 0, err);
    return JSON.parse(out) as WalkSummary;
  }

  async function startWorkers(env: Record<string, string>, source: string | null = corpus): Promise<ChildProcess[]> {
    const workers = await startWalkWorkers(WORKERS, source, env);
    disposals.push(() => stopWalkWorkers(workers));
    return workers;
  }

  const calls = () => mock.stats.messages + mock.stats.embeddings;
  const failuresOf = (summary: WalkSummary) => summary.failures.map((f) => `${f.path} ${f.stage}:${f.code}`);

  let single: Promise<{ summary: WalkSummary; rows: Record<string, string[]>; record: RunRecordBody['result'] }>;
  /** The walk of the same corpus in one process, once for every test. */
  const inOneProcess = () =>
    (single ??= deployment('single').then(async ({ db, env }) => {
      const summary = await walk(env);
      assert.is(summary.status, 'completed');
      assert.equal(
        summary.failures.map((f) => f.path),
        [`${pages.origin}/missing`],
        'only the missing page fails',
      );
      return { summary, rows: await rowsInContentTerms(db), record: await runResult(db, summary.opId) };
    }));

  /** The counts and counters of a walk's pipeline_runs row. */
  async function runResult(db: TestDatabase['db'], opId: string): Promise<RunRecordBody['result']> {
    const { rows } = await db.query<{ result: RunRecordBody['result'] }>(
      'SELECT result FROM pipeline_runs WHERE op_id = $1',
      [opId],
    );
    const { counts, counters } = rows[0]!.result;
    return { counts, counters };
  }

  const DISTRIBUTED = {
    INGEST_WALK_MODE: 'distributed',
    INGEST_STATE_STORE: 'database',
    INGEST_WALK_SUPERVISE_SECONDS: '2',
  };

  async function assertRowsOfOneProcess(db: TestDatabase['db']): Promise<void> {
    const expected = (await inOneProcess()).rows;
    const got = await rowsInContentTerms(db);
    for (const table of WALKED_TABLES) {
      assert.ok(expected[table]!.length > 0, `${table} has rows`);
      assert.equal(got[table], expected[table], table);
    }
  }

  test('a walk on three workers lands the rows and counts of a walk in one process, and its re-walk asks and writes nothing', async () => {
    const alone = (await inOneProcess()).summary;
    const spread = await deployment('spread', DISTRIBUTED);
    await startWorkers(spread.env);
    const health = (env: Record<string, string>) =>
      spawnSync(process.execPath, [BIN, 'walk-worker', 'health'], { env, encoding: 'utf8' });
    const healthy = health(spread.env);
    assert.is(healthy.status, 0, healthy.stderr);
    assert.is(JSON.parse(healthy.stdout).state, 'polling', 'a polling worker beats');
    const none = health({ ...spread.env, INGEST_DATA_DIR: path.join(root, 'no-worker') });
    assert.is(none.status, 1);
    assert.match(none.stderr, /unhealthy: no heartbeat/);
    const distributed = await walk(spread.env);
    assert.is(distributed.status, 'completed', distributed.error);
    assert.equal(distributed.items, alone.items, 'the same item counts');
    assert.equal(failuresOf(distributed), failuresOf(alone), "the same failures: a URL's own, not a lost worker");
    assert.equal(distributed.rows, alone.rows, 'the same rows written per table');
    assert.is(distributed.rowsDeleted, alone.rowsDeleted);
    assert.equal(
      await runResult(spread.db, distributed.opId),
      (await inOneProcess()).record,
      "the run record's counts and counters",
    );
    await assertRowsOfOneProcess(spread.db);
    const { rows: scratch } = await spread.db.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM walk_item_outcomes) + (SELECT count(*) FROM walk_document_claims) AS n',
    );
    assert.is(Number(scratch[0]!.n), 0, "the walk's outcome and claim rows are gone once it ended");

    const before = calls();
    const again = await walk(spread.env);
    assert.is(again.items.changed, 0);
    assert.is(again.items.unchanged, DOCS + 1, 'the files and the page');
    assert.equal(
      Object.values(again.rows).reduce((a, b) => a + b, 0),
      0,
      'no row written',
    );
    assert.is(calls() - before, 0, 'no model call');
  });

  test('a worker killed in the middle of its items: others redo them, and the tables end as one process leaves them', async () => {
    // Slow answers (a mock of its own: its answers are the same), so that the killed worker holds items half done.
    const slow = await startMockServer({ latencyMs: 150 });
    try {
      const spread = await deployment('killed', {
        ...DISTRIBUTED,
        INGEST_WALK_IN_FLIGHT: '4',
        ...mockTierEnv(slow.url),
      });
      const [victim] = await startWorkers(spread.env);
      let said = '';
      victim!.stderr!.on('data', (chunk: string) => {
        said += chunk;
        if (said.includes('walk item done') && victim!.exitCode === null) victim!.kill('SIGKILL');
      });
      const distributed = await walk(spread.env);
      assert.ok(victim!.signalCode === 'SIGKILL', 'a worker was killed during the walk');
      assert.is(distributed.status, 'completed', distributed.error);
      assert.equal(failuresOf(distributed), failuresOf(await inOneProcess().then((r) => r.summary)));
      assert.is(distributed.items.seen, DOCS + URLS.length);
      await assertRowsOfOneProcess(spread.db);
      const { rows } = await spread.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'active'",
        [await walkItemQueue(spread.db)],
      );
      assert.is(rows[0]!.n, 0, 'no job is left active');
    } finally {
      await slow.close();
    }
  });

  test("workers read the corpus bucket, not the coordinator's disk; an object changed after it was queued lands its newer bytes, and the next walk finds it unchanged", async () => {
    const bucket = path.join(root, 'bucket');
    cpSync(corpus, bucket, { recursive: true });
    const mirror = path.join(root, 'bucket-mirror');
    const spread = await deployment('bucketed', { ...DISTRIBUTED, INGEST_CORPUS_BUCKET: pathToFileURL(bucket).href });
    const queue = await walkItemQueue(spread.db);
    /** The paths of the files a walk (every walk: null) sent to workers. */
    const fileJobs = async (opId: string | null) => {
      const { rows } = await spread.db.query<{ path: string }>(
        `SELECT data->'item'->>'relPath' AS path FROM pgboss.job
          WHERE name = $1 AND data->'item'->>'kind' = 'file' AND ($2::text IS NULL OR data->>'opId' = $2)`,
        [queue, opId],
      );
      return rows.map((row) => row.path);
    };
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // The walk queues its items with no worker running; then the bucket changes one of them.
    const first = walk(spread.env, mirror);
    for (let waited = 0; (await fileJobs(null)).length < DOCS; waited += 100) {
      assert.ok(waited < 60_000, 'the walk queued its files');
      await pause(100);
    }
    // Bytes read within 2 s of their mtime are stamped as never matching (engine/item/admit.ts
    // stampMtime); the workers start later than that, so the copies' stamps are the coordinator's.
    await pause(2_100);
    const edited = readdirSync(bucket, { recursive: true, encoding: 'utf8' }).find((name) => name.endsWith('.md'))!;
    const newer = `${readFileSync(path.join(bucket, edited), 'utf8')}\n\nQuillfeather Observatory opened its doors.\n`;
    writeFileSync(path.join(bucket, edited), newer);
    // No PATH and no ENGINE_SOURCE_PATH: the bucket is all the workers can read.
    await startWorkers(spread.env, null);
    const summary = await first;
    assert.is(summary.status, 'completed', summary.error);
    assert.is(summary.items.changed, DOCS + 1, 'every file and the page');
    const { rows: landed } = await spread.db.query<{ sha: string; marked: boolean }>(
      `SELECT d.content_sha256 AS sha, bool_or(c.text LIKE '%Quillfeather Observatory%') AS marked
         FROM source_documents d JOIN content_chunks c ON c.source_document_id = d.id
        WHERE d.rel_path = $1 GROUP BY d.content_sha256`,
      [edited],
    );
    assert.equal(landed, [{ sha: sha256Hex(newer), marked: true }], "the bucket's newer bytes landed, whole");

    // The next walk pulls the newer bytes: only the edited file is read again (its stamp was
    // the copy's own), and nothing is asked or written. It was pulled just before it was read, so
    // the walk after reads it once more (racily clean), and the one after that reads no file.
    const before = calls();
    const again = await walk(spread.env, mirror);
    assert.equal(await fileJobs(again.opId), [edited], 'only the edited file went to a worker');
    assert.is(again.items.changed, 0);
    assert.is(
      Object.values(again.rows).reduce((a, b) => a + b, 0),
      0,
      'no row written',
    );
    assert.is(calls() - before, 0, 'no model call');
    await pause(2_100);
    const third = await walk(spread.env, mirror);
    assert.equal(await fileJobs(third.opId), [edited]);
    assert.is(third.items.unchanged, DOCS + 1);
    const fourth = await walk(spread.env, mirror);
    assert.equal(await fileJobs(fourth.opId), [], "every stamp is the coordinator's stat now");
  });

  test('POST /walk on a distributed sidecar: /walk-status counts as one process does, /metrics names each worker and the queue', async () => {
    const alone = (await inOneProcess()).summary;
    const spread = await deployment('sidecar', { ...DISTRIBUTED, INGEST_APP_URL: pages.origin });
    await startWorkers(spread.env);
    const trigger = 'distributed-trigger';
    const sidecar = spawn(process.execPath, [BIN, 'serve', '--port', '0'], {
      env: { ...spread.env, ENGINE_SOURCE_PATH: corpus, PIPELINE_TRIGGER_SECRET: trigger },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    disposals.push(async () => {
      if (sidecar.exitCode !== null || sidecar.signalCode !== null) return;
      sidecar.kill('SIGTERM');
      await once(sidecar, 'exit');
    });
    const url = await new Promise<string>((resolve) => {
      let out = '';
      sidecar.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const match = /on (http:\/\/[\d.:]+)/.exec(out);
        if (match) resolve(match[1]!);
      });
    });
    const headers = { authorization: `Bearer ${trigger}` };
    const { requestId } = (await (await fetch(`${url}/walk`, { method: 'POST', headers })).json()) as {
      requestId: string;
    };
    let status: { state: string; counts: Record<string, number>; opId: string };
    do {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await (await fetch(`${url}/walk-status/${requestId}`, { headers })).json()) as typeof status;
    } while (status.state === 'accepted' || status.state === 'running');
    assert.is(status.state, 'completed', JSON.stringify(status));
    const expected = walkCounts({ ...alone, sync: null, passes: [] });
    for (const [name, n] of Object.entries(expected)) assert.is(status.counts[name], n, name);
    // The run record went to the web app: its counts and counters are those of the walk in one process.
    const sent = webhooks.find((w) => w.op_id === status.opId && w.status !== 'in_progress');
    assert.is(sent?.status, 'completed');
    assert.equal(
      { counts: sent!.result.counts, counters: sent!.result.counters },
      (await inOneProcess()).record,
      "the webhook's counts and counters",
    );

    const text = await (await fetch(`${url}/metrics`)).text();
    const perWorker = [
      ...text.matchAll(/^ingest_walk_worker_items_total\{worker="([^"]+)",outcome="changed"\} (\d+)$/gm),
    ];
    assert.ok(perWorker.length >= 1, text);
    assert.is(
      perWorker.reduce((sum, m) => sum + Number(m[2]), 0),
      DOCS + 1,
      'every changed item (the files and the page) counted once, under the worker that ran it',
    );
    const completed = new RegExp(
      `^ingest_walk_item_jobs\\{walk="${status.opId}",state="completed"\\} (\\d+)$`,
      'm',
    ).exec(text);
    assert.is(Number(completed?.[1]), DOCS + URLS.length, "the walk's jobs, completed, in the queue gauge");
  });

  test('a walk worker configured with another embedding model fails the items it takes by name and writes no vector', async () => {
    const { db, env } = await deployment('mismatch', DISTRIBUTED);
    await startWorkers({ ...env, INGEST_EMBEDDING_MODEL: 'another-embedder' });
    const summary = await walk(env);
    assert.is(summary.status, 'completed');
    assert.is(summary.items.failed, summary.items.seen);
    assert.equal(
      [...new Set(summary.failures.map((f) => f.code))],
      ['embedding_model_mismatch'],
      failuresOf(summary).slice(0, 5).join('\n'),
    );
    assert.match(
      summary.failures[0]!.message,
      /embeds with another-embedder .* and its walk with text-embedding-3-large/,
    );
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM record_embeddings');
    assert.is(rows[0]!.n, 0);
  });

  test('an item queued under a fence that has passed to a later walk lands nothing', async () => {
    const spread = await deployment('late', DISTRIBUTED);
    await startWorkers(spread.env);
    assert.is((await walk(spread.env)).status, 'completed');
    const token = async () =>
      (
        await spread.db.query<{ token: string }>(
          "SELECT token::text AS token FROM engine_leases WHERE name = 'writer_fence'",
        )
      ).rows[0]!.token;
    const stale = await token();
    assert.is((await walk(spread.env)).status, 'completed');
    assert.not.equal(await token(), stale, 'the second walk took the fence under a new token');

    const late = 'late/arrival.md';
    mkdirSync(path.join(corpus, 'late'), { recursive: true });
    writeFileSync(path.join(corpus, late), '# Late\n\nAda Lovelace wrote this after the walk had ended.\n');
    try {
      const name = await walkItemQueue(spread.db);
      const queue = await JobQueue.open(spread.db, {
        dsn: spread.env.ENGINE_DB_DSN,
        supervise: false,
        queues: [name],
        log: pino({ level: 'silent' }),
      });
      const job: WalkItemJob = {
        opId: randomUUID(),
        fullReprocess: false,
        fenceToken: stale,
        item: { kind: 'file', relPath: late, mediaType: 'text/markdown', seen: null },
      };
      await queue.enqueue(name, [{ data: job }]);
      await queue.stop();
      // Every try of the job fails its first write; then it is failed for good.
      for (let waited = 0; waited < 60_000; waited += 250) {
        const { rows } = await spread.db.query<{ state: string }>(
          "SELECT state FROM pgboss.job WHERE name = $2 AND data->>'opId' = $1",
          [job.opId, name],
        );
        if (rows[0]?.state === 'failed') break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const { rows } = await spread.db.query<{ n: number; state: string }>(
        `SELECT (SELECT count(*)::int FROM source_documents WHERE rel_path = $1) AS n,
                (SELECT state FROM pgboss.job WHERE name = $3 AND data->>'opId' = $2) AS state`,
        [late, job.opId, name],
      );
      assert.is(rows[0]!.state, 'failed', "the late item's job failed");
      assert.is(rows[0]!.n, 0, 'no row of the late item landed');
    } finally {
      rmSync(path.join(corpus, 'late'), { recursive: true, force: true });
    }
  });
}

test.run();
