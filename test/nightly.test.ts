// @engine
// The nightly lane (docs/behaviour/tiers.md#nightly-lane) as the scheduler runs it:
// scripts/nightly.sh and `ingest nightly` in child processes, against real sidecars (`ingest
// serve`) and real mock model servers on loopback. One sidecar runs tier 1 on the plain mock; the
// other tier 2 on a second mock that accepts one token only (`ingest mock --auth-token`), as a
// gateway would. A recording proxy in front of each sidecar shows which requests the lane made, so
// "before any walk" is what the sidecar saw, not what the lane says.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { judgeRun } from '../cli/nightly/rows-landed.ts';
import { BIN, runIngest } from './helpers/cli.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { serveHttp } from './helpers/loopback.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const SCRIPT = path.join(ROOT, 'scripts', 'nightly.sh');
const EXAMPLES = path.join(ROOT, 'examples', 'corpus');
const TRIGGER = 'nightly-test-trigger-secret';
const TOKEN = 'nightly-test-gateway-token';
const DEAD_KEY = 'nightly-test-dead-gateway-key';
const SHA = 'nightly-test-image-sha';
const MOCK_KEY = 'mock-tier-no-credential';
const onPostgres = targetEngine === 'postgres';

interface Sidecar {
  url: string;
  /** The sidecar's own database (PostgreSQL runs only): the lane reads the same rows. */
  target: TestDatabase | null;
  stop(): Promise<void>;
}

interface Recorder {
  url: string;
  /** `METHOD /path` of each request the sidecar got through this proxy, ids as {id}. */
  seen: string[];
  close(): Promise<void>;
}

let root: string;
let mock: MockServer;
let gateway: { url: string; stop(): Promise<void> };
let tier1: Sidecar;
let tier2: Sidecar;
let proxy1: Recorder;
let proxy2: Recorder;
const children: ChildProcess[] = [];

/** Resolves with the first `on http://...` URL the child prints; rejects if it exits first. */
function urlOf(child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (c) => {
      out += c;
      const match = /on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.stderr?.on('data', (c) => (err = (err + c).slice(-4000)));
    child.on('exit', (code) => reject(new Error(`${what} exited early (${code}): ${err}`)));
  });
}

const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
  });

/** `ingest serve` on an ephemeral port with its own data directory (and, on PostgreSQL, its own schema). */
async function startSidecar(name: string, env: Record<string, string>): Promise<Sidecar> {
  const target = onPostgres ? await openTestDatabase() : null;
  await seedDataDir(path.join(root, `${name}-data`));
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], {
    env: {
      PATH: process.env.PATH ?? '',
      PIPELINE_TRIGGER_SECRET: TRIGGER,
      IMAGE_SHA: SHA,
      INGEST_LOG_LEVEL: 'warn',
      INGEST_PRODUCER_AFTER_WALK: 'false',
      INGEST_DATA_DIR: path.join(root, `${name}-data`),
      ...(target?.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const url = await urlOf(child, `sidecar ${name}`);
  return {
    url,
    target,
    async stop() {
      await stopChild(child);
      await target?.dispose();
    },
  };
}

/** A loopback proxy in front of a sidecar that records every request it forwards. */
async function recorder(target: string): Promise<Recorder> {
  const seen: string[] = [];
  const server = await serveHttp((req, res) => {
    seen.push(`${req.method} ${req.url!.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/, '{id}')}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      fetch(`${target}${req.url}`, {
        method: req.method!,
        headers,
        ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
      })
        .then(async (answer) => {
          const back: Record<string, string> = {};
          for (const name of ['content-type', 'retry-after']) {
            const value = answer.headers.get(name);
            if (value !== null) back[name] = value;
          }
          res.writeHead(answer.status, back).end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  return { url: server.origin, seen, close: server.close };
}

interface LaneRun {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `ingest nightly ARGS` in a child process with exactly `env` (plus PATH). */
async function lane(args: string[], env: Record<string, string>): Promise<LaneRun> {
  const started = Date.now();
  const result = await runIngest(['nightly', ...args], { INGEST_LOG_LEVEL: 'warn', ...env });
  return { ...result, ms: Date.now() - started };
}

/** scripts/nightly.sh ARGS, as the platform's scheduler runs it. */
function script(args: string[], env: Record<string, string>): Promise<LaneRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'warn', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (status) => resolve({ status, stdout, stderr, ms: Date.now() - started }));
  });
}

/** The step lines of a lane's output: name -> {ok, seconds, text}. */
function steps(output: string): Map<string, { ok: boolean; seconds: number; text: string }> {
  const out = new Map<string, { ok: boolean; seconds: number; text: string }>();
  for (const m of output.matchAll(/^ {2}(ok {2}|FAIL) {2}(\w+)\s+(\d+\.\d)s {2}(.*)$/gm)) {
    out.set(m[2]!, { ok: m[1] === 'ok  ', seconds: Number(m[3]), text: m[4]! });
  }
  return out;
}

const gatewayStats = async () =>
  ((await (await fetch(`${gateway.url}/health`)).json()) as { stats: MockServer['stats'] }).stats;

const dsnOf = (sidecar: Sidecar): Record<string, string> =>
  sidecar.target?.dsn ? { ENGINE_DB_DSN: sidecar.target.dsn } : {};

/** The lane's environment for tier 1 against the first sidecar. */
const tier1Env = (overrides: Record<string, string> = {}): Record<string, string> => ({
  PIPELINE_TRIGGER_SECRET: TRIGGER,
  ANTHROPIC_BASE_URL: mock.url,
  IMAGE_SHA: SHA,
  ...dsnOf(tier1),
  ...overrides,
});

/** The lane's environment for tier 2 (the gateway mock) against the second sidecar. */
const tier2Env = (token: string): Record<string, string> => ({
  PIPELINE_TRIGGER_SECRET: TRIGGER,
  ANTHROPIC_BASE_URL: gateway.url,
  ANTHROPIC_AUTH_TOKEN: token,
  IMAGE_SHA: SHA,
  ...dsnOf(tier2),
});

async function runRows(sidecar: Sidecar): Promise<{ op_id: string; status: string; seen: number }[]> {
  const { rows } = await sidecar.target!.db.query<{ op_id: string; status: string; seen: number }>(
    `SELECT op_id::text AS op_id, status, (result->'counts'->>'seen')::int AS seen FROM pipeline_runs ORDER BY started_at`,
  );
  return rows;
}

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-nightly-'));
  await cp(EXAMPLES, path.join(root, 'corpus-2'), { recursive: true });
  mock = await startMockServer();
  // The gateway stand-in, as an operator would start it: the real `ingest mock` with a token.
  const gatewayChild = spawn(process.execPath, [BIN, 'mock', '--port', '0', '--auth-token', TOKEN], {
    env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(gatewayChild);
  gateway = { url: await urlOf(gatewayChild, 'ingest mock'), stop: () => stopChild(gatewayChild) };
  [tier1, tier2] = await Promise.all([
    // Tier 1; its corpus directory does not exist yet: the first walk is idle.
    startSidecar('tier1', {
      ENGINE_SOURCE_PATH: path.join(root, 'corpus-1'),
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: MOCK_KEY,
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: MOCK_KEY,
    }),
    // Tier 2: the gateway's address and token, the API key empty
    // (docs/behaviour/tiers.md#the-tiers).
    startSidecar('tier2', {
      ENGINE_SOURCE_PATH: path.join(root, 'corpus-2'),
      ANTHROPIC_BASE_URL: gateway.url,
      ANTHROPIC_AUTH_TOKEN: TOKEN,
      ANTHROPIC_API_KEY: '',
      OPENAI_BASE_URL: `${gateway.url}/v1`,
      OPENAI_API_KEY: TOKEN,
    }),
  ]);
  [proxy1, proxy2] = await Promise.all([recorder(tier1.url), recorder(tier2.url)]);
});

test.after(async () => {
  await Promise.all([proxy1?.close(), proxy2?.close()]);
  await Promise.all([tier1?.stop(), tier2?.stop(), gateway?.stop(), mock?.close()]);
  for (const child of children) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

test('a tier the model environment contradicts is refused by name, before anything is contacted (exit 2)', async () => {
  const before = { mock: mock.stats.messages, gateway: await gatewayStats() };
  const cases: [string[], Record<string, string>, RegExp][] = [
    [
      ['--tier', 'vendor'],
      { ...tier1Env(), ANTHROPIC_API_KEY: 'some-vendor-key' },
      /tier_mismatch: tier vendor needs ANTHROPIC_BASE_URL unset \(the SDK's default address applies\); it is set/,
    ],
    [
      ['--tier', 'vendor'],
      { ...tier2Env(TOKEN) },
      /tier vendor needs ANTHROPIC_API_KEY.*takes no ANTHROPIC_AUTH_TOKEN/,
    ],
    [['--tier', 'gateway'], tier1Env(), /tier_mismatch: tier gateway needs ANTHROPIC_AUTH_TOKEN/],
    [['--tier', 'mock'], tier2Env(TOKEN), /tier_mismatch: tier mock takes no ANTHROPIC_AUTH_TOKEN/],
    // Blank means unset (docs/behaviour/tiers.md#blank-means-unset): a base URL passed through as
    // '' is no base URL.
    [['--tier', 'mock'], tier1Env({ ANTHROPIC_BASE_URL: '  ' }), /tier mock needs ANTHROPIC_BASE_URL at the mock/],
    [['--tier', 'mock'], tier1Env({ PIPELINE_TRIGGER_SECRET: '' }), /trigger_secret_missing: PIPELINE_TRIGGER_SECRET/],
  ];
  const runs = await Promise.all(cases.map(([args, env]) => lane([...args, '--sidecar', proxy1.url], env)));
  runs.forEach((run, i) => {
    assert.is(run.status, 2, `case ${i}: ${run.stdout}${run.stderr}`);
    assert.match(run.stdout, cases[i]![2]);
    assert.equal([...steps(run.stdout).keys()], ['config'], 'no step after config ran');
    assert.match(run.stdout, /nightly lane FAILED at config .*\(exit 2\)/);
    assert.not.match(run.stdout + run.stderr, /some-vendor-key|nightly-test-gateway-token/);
  });
  const usage = await lane(['--tier', 'openrouter'], tier1Env());
  assert.is(usage.status, 2);
  assert.match(usage.stderr, /--tier must be one of mock, gateway, vendor/);
  assert.equal(proxy1.seen, [], 'the sidecar was never asked');
  assert.is(mock.stats.messages, before.mock);
  assert.equal(await gatewayStats(), before.gateway, 'no preflight was sent');
});

test('tier 1 on an idle sidecar: the walk runs, nothing lands, and the lane fails at rows_landed', async () => {
  const run = await script(['mock', '--sidecar', proxy1.url, '--timeout', '120'], tier1Env());
  assert.is(run.status, 1, run.stdout + run.stderr);
  const lines = steps(run.stdout);
  assert.equal([...lines.keys()], ['config', 'mock_health', 'sidecar_health', 'walk', 'rows_landed']);
  assert.ok(lines.get('walk')!.ok);
  assert.not.ok(lines.get('rows_landed')!.ok);
  assert.match(lines.get('rows_landed')!.text, /^nothing_walked: the walk saw no item/);
  assert.match(run.stdout, /nightly lane FAILED at rows_landed .*\(exit 1\)/);
  assert.equal(proxy1.seen.slice(0, 2), ['GET /health', 'POST /walk']);
  assert.ok(proxy1.seen.slice(2).every((r) => r === 'GET /walk-status/{id}'));
  if (onPostgres)
    assert.equal(
      (await runRows(tier1)).map((r) => [r.status, r.seen]),
      [['completed', 0]],
    );
});

test('tier 1 passes end to end through scripts/nightly.sh: health gates, a walk, rows landed', async () => {
  await cp(EXAMPLES, path.join(root, 'corpus-1'), { recursive: true });
  proxy1.seen.length = 0;
  const served = mock.stats.messages;
  const run = await script(['mock', '--sidecar', proxy1.url, '--timeout', '300'], tier1Env());
  assert.is(run.status, 0, run.stdout + run.stderr);
  const lines = steps(run.stdout);
  assert.equal([...lines.keys()], ['config', 'mock_health', 'sidecar_health', 'walk', 'rows_landed']);
  assert.ok([...lines.values()].every((l) => l.ok));
  assert.match(lines.get('config')!.text, new RegExp(`^tier mock \\(${mock.url}\\)`));
  assert.match(lines.get('mock_health')!.text, /the mock model server answers/);
  assert.match(lines.get('walk')!.text, /^completed: request [0-9a-f-]{36}, op [0-9a-f-]{36}/);
  const rows = lines.get('rows_landed')!.text;
  assert.match(
    rows,
    /8 of 8 items landed \(8 changed, 0 unchanged\); rows written: content_chunks \d+, entity_mentions \d+, .*source_documents 8\b/,
  );
  assert.match(run.stdout, /nightly lane passed in \d+\.\ds\n$/);
  assert.ok(mock.stats.messages > served, 'the walk asked the tier-1 mock');
  assert.equal(proxy1.seen.slice(0, 2), ['GET /health', 'POST /walk']);
  const opId = /op ([0-9a-f-]{36})/.exec(lines.get('walk')!.text)![1]!;
  if (onPostgres) {
    // Read from the ledger, and the ledger agrees.
    assert.match(rows, new RegExp(`^pipeline_runs op ${opId}: completed, extractor_version ${SHA}; `));
    assert.match(rows, /rows with this op_id: source_documents 8, content_chunks \d+/);
    const runs = await runRows(tier1);
    assert.equal(runs.at(-1), { op_id: opId, status: 'completed', seen: 8 });
    const { rows: documents } = await tier1.target!.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM source_documents WHERE op_id = $1::uuid`,
      [opId],
    );
    assert.is(documents[0]!.n, 8);
  } else {
    assert.match(rows, /^from the walk-status counts \(pipeline_runs is not readable on the embedded database/);
  }
});

test('an unchanged corpus still passes (no row rewritten), and --json reports the run; the tier defaults to mock', async () => {
  // No tier argument and no LLM_TIER: the script's default, tier 1.
  const run = await script(['--sidecar', proxy1.url, '--timeout', '120', '--json'], tier1Env());
  assert.is(run.status, 0, run.stdout + run.stderr);
  const report = JSON.parse(run.stdout) as {
    ok: boolean;
    exitCode: number;
    tier: string;
    steps: { name: string; ok: boolean; ms: number }[];
    counts: Record<string, number>;
    source: string;
    opId: string;
  };
  assert.is(report.ok, true);
  assert.is(report.exitCode, 0);
  assert.is(report.tier, 'mock');
  assert.equal(
    report.steps.map((s) => [s.name, s.ok]),
    ['config', 'mock_health', 'sidecar_health', 'walk', 'rows_landed'].map((n) => [n, true]),
  );
  assert.ok(report.steps.every((s) => Number.isInteger(s.ms) && s.ms >= 0));
  assert.equal([report.counts.seen, report.counts.changed, report.counts.unchanged], [8, 0, 8]);
  assert.is(report.source, onPostgres ? 'pipeline_runs' : 'walk-status');
  // The step lines went to stderr, so stdout is the JSON alone.
  assert.match(
    run.stderr,
    /^ {2}ok {4}rows_landed .*8 of 8 items landed \(0 changed, 8 unchanged\); rows written: none/m,
  );
});

test('tier 2 with a dead key fails at the preflight at once, and no walk is asked for', async () => {
  const before = await gatewayStats();
  const run = await lane(['--tier', 'gateway', '--sidecar', proxy2.url, '--timeout', '120'], tier2Env(DEAD_KEY));
  assert.is(run.status, 1, run.stdout + run.stderr);
  const lines = steps(run.stdout);
  assert.equal([...lines.keys()], ['config', 'preflight'], 'nothing after the preflight ran');
  const preflight = lines.get('preflight')!;
  assert.not.ok(preflight.ok);
  assert.match(preflight.text, /^preflight_failed: .* \(tier gateway\): HTTP 401, authentication_error: /);
  assert.ok(preflight.seconds < 5, `the preflight failed in ${preflight.seconds}s`);
  assert.ok(run.ms < 30_000, `the whole lane took ${run.ms} ms`);
  assert.match(run.stdout, /nightly lane FAILED at preflight .*\(exit 1\)/);
  const after = await gatewayStats();
  assert.is(after.unauthorized - before.unauthorized, 1, 'one ping, refused, not retried');
  assert.is(after.messages, before.messages);
  assert.equal(proxy2.seen, [], 'the sidecar was never asked: no health check, no walk');
  assert.not.match(run.stdout + run.stderr, new RegExp(`${DEAD_KEY}|${TOKEN}|${TRIGGER}`));
  if (onPostgres) assert.equal(await runRows(tier2), [], 'no pipeline_runs row: no walk ran');
});

test('tier 2 with the right token passes the preflight, and the walk runs on the gateway', async () => {
  const before = await gatewayStats();
  // A vendor key left in the environment (a compose default) is not a mismatch: the gateway's
  // client never sends it. Sent as x-api-key, the gateway mock would take it over the token and refuse.
  const run = await lane(['--tier', 'gateway', '--sidecar', proxy2.url, '--timeout', '300'], {
    ...tier2Env(TOKEN),
    ANTHROPIC_API_KEY: 'a-vendor-key-left-behind',
  });
  assert.is(run.status, 0, run.stdout + run.stderr);
  const lines = steps(run.stdout);
  assert.equal([...lines.keys()], ['config', 'preflight', 'sidecar_health', 'walk', 'rows_landed']);
  assert.match(lines.get('config')!.text, /; ANTHROPIC_API_KEY is set and not sent: the gateway tier forces it empty$/);
  assert.match(lines.get('preflight')!.text, new RegExp(`^tier gateway, ${gateway.url}:[^,]+, answered "pong"$`));
  assert.match(lines.get('rows_landed')!.text, /8 of 8 items landed \(8 changed, 0 unchanged\)/);
  const after = await gatewayStats();
  assert.ok(after.messages - before.messages > 1, 'the preflight and the walk were served with the token');
  assert.is(after.unauthorized, before.unauthorized, 'the sidecar presented the token too');
  assert.equal(proxy2.seen.slice(0, 2), ['GET /health', 'POST /walk']);
  assert.not.match(run.stdout + run.stderr, new RegExp(TOKEN));
  if (onPostgres)
    assert.equal(
      (await runRows(tier2)).map((r) => [r.status, r.seen]),
      [['completed', 8]],
    );
});

test('tier 1 against something that is not the mock, or against nothing, fails at mock_health within its bound', async () => {
  proxy1.seen.length = 0;
  // A loopback port nobody listens on (fetch refuses low ports such as 1 outright).
  const closed = await serveHttp(() => {});
  await closed.close();
  const [notMock, nothing] = await Promise.all([
    // The sidecar's /health answers 200, but not as the mock does.
    lane(['--tier', 'mock', '--sidecar', proxy1.url], tier1Env({ ANTHROPIC_BASE_URL: tier1.url })),
    lane(
      ['--tier', 'mock', '--sidecar', proxy1.url, '--timeout', '3'],
      tier1Env({ ANTHROPIC_BASE_URL: closed.origin }),
    ),
  ]);
  assert.is(notMock.status, 1);
  assert.match(
    steps(notMock.stdout).get('mock_health')!.text,
    /^not_the_mock: .*answered HTTP 200 without the mock's body/,
  );
  assert.is(nothing.status, 1);
  const unreachable = steps(nothing.stdout).get('mock_health')!;
  assert.match(
    unreachable.text,
    new RegExp(`^mock_unreachable: ${closed.origin}/health did not answer within [\\d.]+s: ECONNREFUSED$`),
  );
  assert.ok(unreachable.seconds <= 4, `bounded by --timeout 3: ${unreachable.seconds}s`);
  assert.equal(proxy1.seen, []);
});

test("a lane whose trigger bearer is not the sidecar's fails at the walk step, by name", async () => {
  const run = await lane(
    ['--tier', 'mock', '--sidecar', proxy1.url],
    tier1Env({ PIPELINE_TRIGGER_SECRET: 'not-the-sidecars' }),
  );
  assert.is(run.status, 1);
  assert.match(steps(run.stdout).get('walk')!.text, /^trigger_refused: POST \/walk answered 401/);
  assert.not.match(run.stdout + run.stderr, /not-the-sidecars/);
});

test("extractor_version is checked against the lane's IMAGE_SHA where pipeline_runs is readable", async () => {
  const run = await lane(['--tier', 'mock', '--sidecar', proxy1.url], tier1Env({ IMAGE_SHA: 'another-image' }));
  if (onPostgres) {
    assert.is(run.status, 1, run.stdout);
    assert.match(
      steps(run.stdout).get('rows_landed')!.text,
      new RegExp(
        `^extractor_version_mismatch: the run's extractor_version is ${SHA}, the lane's IMAGE_SHA another-image`,
      ),
    );
  } else {
    // The embedded database: the walk-status answer carries no extractor_version; the lane says where it read.
    assert.is(run.status, 0, run.stdout);
    assert.match(steps(run.stdout).get('rows_landed')!.text, /not readable on the embedded database/);
  }
});

test('what "rows landed" refuses, fact by fact', () => {
  const counts = { seen: 8, changed: 2, unchanged: 6, failed: 0, dropped: 0, rows_source_documents: 2 };
  const ledger = { source: 'pipeline_runs' as const, status: 'completed', counts, extractorVersion: 'sha' };
  const codes = (facts: Parameters<typeof judgeRun>[0]) => judgeRun(facts).map((p) => p.code);
  assert.equal(codes({ ...ledger, rowsOfRun: { source_documents: 2 }, documents: 8 }), []);
  assert.equal(codes({ ...ledger, status: 'abandoned' }), ['run_not_completed']);
  assert.equal(codes({ ...ledger, extractorVersion: null }), ['extractor_version_missing']);
  assert.equal(codes({ ...ledger, expectedVersion: 'other' }), ['extractor_version_mismatch']);
  assert.equal(codes({ ...ledger, expectedVersion: 'sha' }), []);
  assert.equal(codes({ ...ledger, counts: { ...counts, changed: 0, unchanged: 0, failed: 8 } }), ['no_item_landed']);
  assert.equal(codes({ ...ledger, counts: { ...counts, changed: 0, unchanged: 0, dropped: 8 } }), ['no_item_landed']);
  assert.equal(codes({ ...ledger, counts: { ...counts, rows_source_documents: 0 } }), ['no_rows_written']);
  assert.equal(codes({ ...ledger, rowsOfRun: { source_documents: 0 } }), ['rows_missing']);
  assert.equal(codes({ ...ledger, documents: 0 }), ['rows_missing']);
  // Some items failed while others landed: the walk tolerates it
  // (docs/behaviour/stages.md#per-item-isolation), so does the lane.
  assert.equal(codes({ ...ledger, counts: { ...counts, failed: 3, unchanged: 3 } }), []);
  // The walk-status answer has no extractor_version to check: not a failure there.
  assert.equal(codes({ source: 'walk-status', status: 'completed', counts }), []);
  assert.equal(codes({ source: 'walk-status', status: 'completed', counts: {} }), ['nothing_walked']);
});

test.run();
