// @engine
// A distributed walk's faults (issue 43), on PostgreSQL, in real processes only: `ingest walk` as
// the coordinator, three `ingest walk-worker` processes, a mock model server on a fixed loopback
// URL, and a database role without CREATE. What it proves:
// - a coordinator killed with SIGKILL in the middle of its walk's items costs nothing: the next
//   walk completes, the dead walk's ledger row ends abandoned, the tables end as a walk in one
//   process leaves them, nothing the dead walk's items write lands once the next walk has begun
//   (its fencing token refuses them), and none of its jobs stays active past its expiry and one
//   supervision pass;
// - stage 5 and the other flow-scope passes run once per walk, in the coordinator, and only after
//   every item of that walk has settled on whichever worker ran it;
// - a second coordinator started during a walk (another data directory, the same database) is
//   refused with fence_busy, and the walk it met completes unharmed;
// - three workers on one model budget in the database keep a provider's tokens-per-window limit:
//   no item fails and at most 1 % of the requests meet a 429.
// Two tests need a mock of their own, on ports of their own: the kill needs slow answers (so the
// dead walk still has items out when the next one begins), the budget a mock that enforces limits.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { mockTierEnv } from './helpers/mock-tier.ts';
import { startWalkWorkers, stopWalkWorkers } from '../bench/walk-workers.ts';
import { BIN, generateCorpus } from './helpers/corpus.ts';
import { rowsInContentTerms, WALKED_TABLES } from './helpers/content.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { createNoCreateRole } from './helpers/no-create-role.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { walkItemQueue } from '../lib/queue/job-queue.ts';

const DOCS = 24;
const WORKERS = 3;
/** Seconds between the queue's supervision passes (the default 60 would keep a test waiting a minute). */
const SUPERVISE_SECONDS = 2;
/** This file's mocks, on ports no other test uses. */
const MOCK_PORT = 18_795;
const LIMITED_MOCK_PORT = 18_796;
const SLOW_MOCK_PORT = 18_797;
/** The slow mock's latency: an item then takes about a second, and a dead walk's items are still queued when the next walk starts. */
const SLOW_LATENCY_MS = 500;
/**
 * The walk_item queue's expiry in the kill test, in seconds: an hour in schema/0021 (no variable
 * sets it), made short by the queue's owner so that a job stuck past it shows within the test.
 */
const EXPIRE_SECONDS = 20;
/** The limited mock's window and its tokens per window and model; the budget's share of it (as test/model-budget.test.ts). */
const WINDOW_MS = 1000;
const LIMIT = 40_000;
const SHARE = 0.85;
/** A walk of this corpus that has not ended by then is stuck: it is killed, so the test fails rather than hangs. */
const STUCK_MS = 180_000;
/** The flow-scope passes in the order a walk runs them (engine/lifespan.ts, engine/walk/passes.ts). */
const PASSES = ['entity_resolution', 'qa_dedup', 'url_backlink', 'cleanup'];
/** What the passes log at info when they run (url_backlink_reconciled every time, the others when they found work). */
const PASS_RECORDS = ['entity resolution', 'Q&A dedup proposals', 'url_backlink_reconciled'];
/** The states a job ends in. */
const SETTLED = ['completed', 'failed'];

const DISTRIBUTED = {
  INGEST_WALK_MODE: 'distributed',
  INGEST_STATE_STORE: 'database',
  INGEST_WALK_SUPERVISE_SECONDS: String(SUPERVISE_SECONDS),
};

/** One pino record of a child's stderr. */
interface LogLine {
  time: number;
  msg: string;
  pid: number;
  opId?: string;
  pass?: string;
  item?: string;
  [field: string]: unknown;
}

/** A child's stderr, kept whole and as the JSON records it carries. */
class LogWatch {
  readonly lines: LogLine[] = [];
  text = '';
  #partial = '';
  #ended = false;
  #waiting: { match: (line: LogLine) => boolean; resolve: (line: LogLine) => void; reject: (e: Error) => void }[] = [];

  constructor(stream: Readable) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      this.text += chunk;
      const parts = (this.#partial + chunk).split('\n');
      this.#partial = parts.pop()!;
      for (const part of parts) if (part.startsWith('{')) this.#take(JSON.parse(part) as LogLine);
    });
    stream.on('close', () => {
      this.#ended = true;
      for (const w of this.#waiting) w.reject(new Error(`the process ended first:\n${this.text}`));
      this.#waiting = [];
    });
  }

  #take(line: LogLine): void {
    this.lines.push(line);
    this.#waiting = this.#waiting.filter((w) => !(w.match(line) && (w.resolve(line), true)));
  }

  /** The first record that matches, now or once it is logged; rejected if the process ends first. */
  until(match: (line: LogLine) => boolean): Promise<LogLine> {
    const seen = this.lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    if (this.#ended) return Promise.reject(new Error(`the process ended first:\n${this.text}`));
    return new Promise((resolve, reject) => this.#waiting.push({ match, resolve, reject }));
  }
}

/** A running `ingest walk --json`. */
interface RunningWalk {
  child: ChildProcess;
  log: LogWatch;
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }>;
  /** From its 'walk started' record. */
  opId: Promise<string>;
}

/** A deployment: its database (the owner's connection), its environment, its queue, its workers' logs. */
interface Deployment {
  db: TestDatabase['db'];
  env: Record<string, string>;
  corpus: string;
  queue: string;
}
interface WithWorkers extends Deployment {
  workerLogs: LogWatch[];
}

let root: string;
let corpus: string;
let mock: MockServer;
const disposals: (() => Promise<void>)[] = [];
/** Every process this file started; the coordinators apart. */
const children: ChildProcess[] = [];
const coordinators: ChildProcess[] = [];
const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

if (targetEngine === 'postgres') {
  test.before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'ingest-distributed-faults-'));
    corpus = path.join(root, 'corpus');
    generateCorpus(corpus, DOCS, { mix: 'md:80,html:20', seed: 43 });
    mock = await startMockServer({}, { port: MOCK_PORT });
  });
  // A run that an assertion ends early leaves no worker or coordinator behind.
  process.on('exit', () => {
    for (const child of children.filter(running)) child.kill('SIGKILL');
  });
  test.after(async () => {
    for (const child of coordinators.filter(running)) child.kill('SIGKILL');
    for (const dispose of disposals.reverse()) await dispose();
    await mock.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** A database of its own (reached as a role without CREATE), a data directory, and the model's environment. */
  async function deployment(name: string, extra: Record<string, string> = {}, dir = corpus): Promise<Deployment> {
    const t = await openTestDatabase();
    const role = await createNoCreateRole(t.dsn!);
    disposals.push(
      () => t.dispose(),
      () => role.dispose(),
    );
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ENGINE_DB_DSN: role.dsn,
      INGEST_DATA_DIR: path.join(root, name),
      INGEST_LOG_LEVEL: 'info',
      INGEST_PRODUCER_AFTER_WALK: 'false',
      ...mockTierEnv(mock.url),
      ...extra,
    };
    return { db: t.db, env, corpus: dir, queue: await walkItemQueue(t.db) };
  }

  /** The deployment's three walk workers (`env` added to the deployment's), their logs kept. */
  async function withWorkers(d: Deployment, env: Record<string, string> = {}): Promise<WithWorkers> {
    const workers = await startWalkWorkers(WORKERS, d.corpus, { ...d.env, ...env });
    children.push(...workers);
    disposals.push(() => stopWalkWorkers(workers));
    return { ...d, workerLogs: workers.map((w) => new LogWatch(w.stderr!)) };
  }

  /** `ingest walk --json`, spawned: run synchronously it would block the mocks, which answer from this process. */
  function startWalk(env: Record<string, string>, dir = corpus): RunningWalk {
    const child = spawn(process.execPath, [BIN, 'walk', dir, '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    coordinators.push(child);
    const stuck = setTimeout(() => child.kill('SIGKILL'), STUCK_MS).unref();
    const log = new LogWatch(child.stderr);
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const closed = once(child, 'close').then(([code, signal]) => {
      clearTimeout(stuck);
      return { code: code as number | null, signal: signal as NodeJS.Signals | null, stdout };
    });
    const opId = log.until((l) => l.msg === 'walk started').then((l) => l.opId!);
    // A walk refused before it started has no op id; only a test that asks for one hears of it.
    opId.catch(() => {});
    return { child, log, closed, opId };
  }

  async function summaryOf(walk: RunningWalk): Promise<WalkSummary> {
    const { code, stdout } = await walk.closed;
    assert.is(code, 0, walk.log.text);
    return JSON.parse(stdout) as WalkSummary;
  }

  /** The workers' 'walk item done' records of the walk `opId`. */
  const itemsDone = (d: WithWorkers, opId: string) =>
    d.workerLogs.flatMap((w) => w.lines.filter((l) => l.msg === 'walk item done' && l.opId === opId));

  /** Resolves once any worker has finished an item of the walk `opId`. */
  const firstItemDone = (d: WithWorkers, opId: string) =>
    Promise.race(d.workerLogs.map((w) => w.until((l) => l.msg === 'walk item done' && l.opId === opId)));

  let single: Promise<Record<string, string[]>> | undefined;
  /** The tables a walk of the corpus in one process leaves, walked once for every test. */
  const inOneProcess = () =>
    (single ??= deployment('single').then(async ({ db, env }) => {
      const summary = await summaryOf(startWalk(env));
      assert.is(summary.status, 'completed');
      assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
      return rowsInContentTerms(db);
    }));

  async function assertRowsOfOneProcess(db: TestDatabase['db']): Promise<void> {
    const expected = await inOneProcess();
    const got = await rowsInContentTerms(db);
    for (const table of WALKED_TABLES) {
      assert.ok(expected[table]!.length > 0, `${table} has rows`);
      assert.equal(got[table], expected[table], table);
    }
  }

  /** The jobs of the walk `opId`, per state. */
  async function jobStates(d: Deployment, opId: string): Promise<Record<string, number>> {
    const { rows } = await d.db.query<{ state: string; n: number }>(
      "SELECT state::text, count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'opId' = $2 GROUP BY 1",
      [d.queue, opId],
    );
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  /** Looks every 250 ms, until stopped, for jobs of the walk `opId` active longer than their expiry and a supervision pass. */
  function watchOverdue(d: Deployment, opId: string): { found: string[]; stop(): void } {
    const found: string[] = [];
    let watching = true;
    void (async () => {
      while (watching) {
        const { rows } = await d.db.query<{ id: string; age: number; expiry: number }>(
          `SELECT id::text, extract(epoch FROM now() - started_on)::float8 AS age, expire_seconds AS expiry
             FROM pgboss.job WHERE name = $1 AND data->>'opId' = $2 AND state = 'active'`,
          [d.queue, opId],
        );
        for (const job of rows)
          if (job.age > job.expiry + SUPERVISE_SECONDS) found.push(`${job.id} active for ${job.age.toFixed(1)} s`);
        await sleep(250);
      }
    })().catch((error: unknown) => found.push(`the watch failed: ${(error as Error).message}`));
    return { found, stop: () => (watching = false) };
  }

  const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

  test('stage 5 and the other flow-scope passes run once per walk, in the coordinator, after its last item settled', async () => {
    // A copy of the corpus of its own: the second walk changes files in it.
    const dir = path.join(root, 'corpus-passes');
    cpSync(corpus, dir, { recursive: true });
    const d = await withWorkers(await deployment('passes', { ...DISTRIBUTED, INGEST_WALK_IN_FLIGHT: '3' }, dir));
    // The coordinator logs each pass as it starts at debug.
    const env = { ...d.env, INGEST_LOG_LEVEL: 'debug' };

    /** One walk's checks; returns its items' records. */
    const check = async (walk: RunningWalk, changed: number): Promise<LogLine[]> => {
      const summary = await summaryOf(walk);
      const opId = await walk.opId;
      assert.is(summary.status, 'completed', summary.error);
      assert.is(summary.items.changed, changed);
      assert.equal(
        summary.passes.map((p) => [p.name, p.ok]),
        PASSES.map((name) => [name, true]),
      );
      const started = walk.log.lines.filter((l) => l.msg === 'flow-scope pass started' && l.opId === opId);
      assert.equal(
        started.map((l) => l.pass),
        PASSES,
        'each pass started once, in order',
      );
      const reconciled = walk.log.lines.filter((l) => l.msg === 'url_backlink_reconciled' && l.opId === opId);
      assert.is(reconciled.length, 1, 'the backlink pass ran once');
      const done = itemsDone(d, opId);
      assert.is(done.length, changed, 'every item ran on a worker');
      assert.is(new Set(done.map((l) => l.item)).size, changed, 'each item once');

      // Against the database's clock (on this host, as the coordinator's): every item's job had
      // started, and every row the items wrote was written, before the first pass began. The
      // passes write none of these rows (they move mentions, relationships and the mentions'
      // embeddings, which are left out).
      const { rows } = await d.db.query<{ jobs: number; completed: number; job_started: number; item_rows: number }>(
        `SELECT count(*)::int AS jobs, (count(*) FILTER (WHERE state = 'completed'))::int AS completed,
                ${epochMs('max(started_on)')} AS job_started,
                (SELECT ${epochMs('max(updated_at)')} FROM (
                   SELECT updated_at FROM source_documents WHERE op_id = $1::uuid
                   UNION ALL SELECT updated_at FROM content_chunks WHERE op_id = $1::uuid
                   UNION ALL SELECT updated_at FROM q_a_extractions WHERE op_id = $1::uuid
                   UNION ALL SELECT updated_at FROM record_embeddings
                              WHERE op_id = $1::uuid AND owner_kind IN ('content_chunk', 'q_a_extraction')) AS w) AS item_rows
           FROM pgboss.job WHERE name = $2 AND data->>'opId' = $1::text`,
        [opId, d.queue],
      );
      const r = rows[0]!;
      assert.equal([r.jobs, r.completed], [changed, changed], 'one job per item, every one completed');
      const firstPass = started[0]!.time;
      assert.ok(r.job_started < firstPass, `an item started ${r.job_started - firstPass} ms after the passes began`);
      assert.ok(r.item_rows <= firstPass, `an item wrote rows ${r.item_rows - firstPass} ms after the passes began`);
      // Stage 5 did its work on this walk: both of its ledgers list it.
      const { rows: ledgers } = await d.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM entity_resolution_ops WHERE op_id = $1::uuid)
              + (SELECT count(*) FROM q_a_dedup_ops WHERE op_id = $1::uuid) AS n`,
        [opId],
      );
      assert.is(Number(ledgers[0]!.n), 2, "the walk is in stage 5's ledgers");
      return done;
    };

    const cold = await check(startWalk(env, dir), DOCS);
    assert.is(new Set(cold.map((l) => l.pid)).size, WORKERS, 'the items were spread over the three workers');
    // A second walk over a few changed files: its passes are its own, run once more.
    const changedFiles = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.md'))
      .sort()
      .slice(0, 5);
    for (const file of changedFiles) appendFileSync(path.join(dir, file), '\n\nAda Lovelace read this again.\n');
    const warm = await check(startWalk(env, dir), changedFiles.length);
    assert.not.equal(warm[0]!.opId, cold[0]!.opId);
    const inWorkers = d.workerLogs.flatMap((w) => w.lines.filter((l) => PASS_RECORDS.includes(l.msg)));
    assert.equal(inWorkers, [], 'no worker ran a pass');
  });

  test('a coordinator killed among its items: the next walk completes, the dead walk is abandoned, nothing of it lands late', async () => {
    // The workers ask the slow mock (its answers are the same), one item at a time each, so that
    // the dead walk still has items queued when the next walk takes the fence; the coordinators'
    // stage 5 asks the quick one.
    const slow = await startMockServer({ latencyMs: SLOW_LATENCY_MS }, { port: SLOW_MOCK_PORT });
    disposals.push(() => slow.close());
    const base = await deployment('killed', { ...DISTRIBUTED, INGEST_WALK_IN_FLIGHT: '1' });
    // A job copies its expiry from its queue's row when it is inserted.
    await base.db.query('UPDATE pgboss.queue SET expire_seconds = $2 WHERE name = $1', [base.queue, EXPIRE_SECONDS]);
    const d = await withWorkers(base, mockTierEnv(slow.url));

    const dead = startWalk(base.env);
    const deadOp = await dead.opId;
    await firstItemDone(d, deadOp);
    dead.child.kill('SIGKILL');
    assert.is((await dead.closed).signal, 'SIGKILL');
    const atKill = await jobStates(d, deadOp);
    assert.ok(
      Object.keys(atKill).some((state) => !SETTLED.includes(state)),
      `the kill fell among the items: ${JSON.stringify(atKill)}`,
    );

    // Watched from the kill until every job of the dead walk has settled.
    const overdue = watchOverdue(d, deadOp);
    let summary: WalkSummary;
    let nextOp: string;
    let states: Record<string, number>;
    try {
      // The next walk takes the fence at once: its holder's pid is gone from this host.
      const next = startWalk(base.env);
      summary = await summaryOf(next);
      nextOp = await next.opId;
      // Jobs of the dead walk that its fence still covered completed; the others are refused at
      // their first write and fail for good once their tries are spent.
      const settledBy = Date.now() + (EXPIRE_SECONDS + SUPERVISE_SECONDS) * 1000;
      states = await jobStates(d, deadOp);
      while (Object.keys(states).some((state) => !SETTLED.includes(state)) && Date.now() < settledBy) {
        await sleep(250);
        states = await jobStates(d, deadOp);
      }
    } finally {
      overdue.stop();
    }
    assert.is(summary.status, 'completed', summary.error);
    assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
    assert.ok(summary.items.unchanged > 0, `the items the dead walk committed stand: ${JSON.stringify(summary.items)}`);
    assert.ok(summary.items.changed > 0, `the items it had not committed are redone: ${JSON.stringify(summary.items)}`);
    assert.equal(overdue.found, [], 'no job of the dead walk stayed active past its expiry and a supervision pass');
    assert.equal(
      Object.keys(states).filter((state) => !SETTLED.includes(state)),
      [],
      `every job of the dead walk settled: ${JSON.stringify(states)}`,
    );
    const { rows: failed } = await d.db.query<{ output: unknown }>(
      "SELECT output FROM pgboss.job WHERE name = $1 AND data->>'opId' = $2 AND state = 'failed'",
      [d.queue, deadOp],
    );
    assert.ok(
      failed.length > 0,
      `items of the dead walk ran after the next walk took the fence: ${JSON.stringify(states)}`,
    );
    for (const { output } of failed)
      assert.match(JSON.stringify(output), /fence_lost/, 'refused by the fence, by nothing else');

    const { rows: runs } = await d.db.query<{ op_id: string; status: string; started: number }>(
      `SELECT op_id::text, status, ${epochMs('started_at')} AS started FROM pipeline_runs WHERE flow = 'walk' ORDER BY started_at`,
    );
    assert.equal(
      runs.map((r) => [r.op_id, r.status]),
      [
        [deadOp, 'abandoned'],
        [nextOp, 'completed'],
      ],
    );
    await assertRowsOfOneProcess(d.db);

    // The fencing token: no row of the dead walk's items was written once the next walk had
    // begun. Only the tables items alone write are read (the passes move mentions and their
    // embeddings under the op id of the walk that found them).
    const { rows: late } = await d.db.query<{ table: string; n: number }>(
      `SELECT 'source_documents' AS table, count(*)::int AS n FROM source_documents WHERE op_id = $1::uuid AND updated_at >= $2
       UNION ALL SELECT 'content_chunks', count(*)::int FROM content_chunks WHERE op_id = $1::uuid AND updated_at >= $2
       UNION ALL SELECT 'q_a_extractions', count(*)::int FROM q_a_extractions WHERE op_id = $1::uuid AND updated_at >= $2
       UNION ALL SELECT 'walk_item_outcomes', count(*)::int FROM walk_item_outcomes WHERE op_id = $1::uuid AND finished_at >= $2`,
      [deadOp, new Date(runs[1]!.started)],
    );
    assert.equal(
      late.filter((r) => r.n > 0),
      [],
      "rows of the dead walk's items written after the next walk began",
    );
    // The dead walk's scratch (outcomes no coordinator took, document claims) went with the next walk.
    const { rows: scratch } = await d.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM walk_item_outcomes) + (SELECT count(*) FROM walk_document_claims) AS n`,
    );
    assert.is(Number(scratch[0]!.n), 0, "the dead walk's outcome and claim rows are gone");
  });

  test('a second coordinator during a walk is refused with fence_busy, and the walk completes unharmed', async () => {
    const d = await withWorkers(await deployment('busy', { ...DISTRIBUTED, INGEST_WALK_IN_FLIGHT: '2' }));
    const first = startWalk(d.env);
    const opId = await first.opId;
    await firstItemDone(d, opId);
    const second = startWalk({ ...d.env, INGEST_DATA_DIR: path.join(root, 'busy-second') });
    const refused = await second.closed;
    assert.ok(running(first.child), 'the first walk was still running when the second was refused');
    // How `ingest walk` reports a busy fence (cli/walk.ts, docs/OPERATIONS.md "Walking"): exit 1,
    // no summary, and who holds it.
    assert.is(refused.code, 1, second.log.text);
    assert.is(refused.stdout, '', 'no walk, no summary');
    assert.match(
      second.log.text,
      new RegExp(
        `another corpus writer holds the writer fence in the database at .*\\(held by .*pid ${first.child.pid} `,
      ),
    );

    const summary = await summaryOf(first);
    assert.is(summary.status, 'completed', summary.error);
    assert.is(summary.items.changed, DOCS);
    assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
    await assertRowsOfOneProcess(d.db);
    const { rows: runs } = await d.db.query<{ status: string; op_id: string }>(
      "SELECT status, op_id::text FROM pipeline_runs WHERE flow = 'walk' ORDER BY status",
    );
    assert.equal(
      runs.map((r) => r.status),
      ['completed', 'fence_busy'],
      'one walk, one refusal',
    );
    assert.is(runs[0]!.op_id, opId);
    const { rows: jobs } = await d.db.query<{ walk: string; n: number }>(
      "SELECT data->>'opId' AS walk, count(*)::int AS n FROM pgboss.job WHERE name = $1 GROUP BY 1",
      [d.queue],
    );
    assert.equal(jobs, [{ walk: opId, n: DOCS }], 'the refused coordinator queued nothing');
  });

  test("three workers on one model budget keep the provider's limit: no item fails, at most 1 % of requests meet a 429", async () => {
    const limited = await startMockServer(
      { limits: { windowMs: WINDOW_MS, window: 'fixed', per: { tokens: LIMIT } } },
      { port: LIMITED_MOCK_PORT },
    );
    disposals.push(() => limited.close());
    const perMinute = String(Math.floor((LIMIT * SHARE * 60_000) / WINDOW_MS));
    const d = await withWorkers(
      await deployment('budget', {
        ...DISTRIBUTED,
        ...mockTierEnv(limited.url),
        INGEST_WALK_IN_FLIGHT: '4',
        INGEST_ANTHROPIC_TOKENS_PER_MINUTE: perMinute,
        INGEST_OPENAI_TOKENS_PER_MINUTE: perMinute,
        INGEST_MODEL_BUDGET_WINDOW_MS: String(WINDOW_MS),
      }),
    );
    const walk = startWalk(d.env);
    const summary = await summaryOf(walk);
    const opId = await walk.opId;
    assert.is(summary.status, 'completed', summary.error);
    assert.is(summary.items.changed, DOCS);
    assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
    const requests = limited.admissions.length;
    assert.ok(limited.stats.limited <= requests * 0.01, `429s: ${limited.stats.limited} of ${requests} requests`);

    // The limit is what held the workers back: while they ran the items, the extraction model's
    // tokens reached half the limit in several windows (unbudgeted they draw more than twice it).
    const done = itemsDone(d, opId);
    assert.is(new Set(done.map((l) => l.pid)).size, WORKERS, 'every worker ran items');
    const itemsEnd = Math.max(...done.map((l) => l.time));
    const perWindow = new Map<number, number>();
    for (const a of limited.admissions) {
      if (a.route !== 'messages' || a.retryAfterMs !== undefined || a.at > itemsEnd) continue;
      const window = Math.floor(a.at / WINDOW_MS);
      perWindow.set(window, (perWindow.get(window) ?? 0) + a.tokens);
    }
    const busy = [...perWindow.values()].filter((tokens) => tokens >= LIMIT / 2);
    assert.ok(busy.length >= 3, `tokens per window while the items ran: ${JSON.stringify([...perWindow.values()])}`);
    const { rows } = await d.db.query<{ key: string }>('SELECT key FROM model_budget');
    assert.ok(
      rows.some((r) => r.key.startsWith('anthropic-tokens:')),
      'the budget was debited in the database',
    );
    await assertRowsOfOneProcess(d.db);
  });
}

test.run();
