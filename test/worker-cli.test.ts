// @engine
// `ingest jobs`, `ingest worker`, `ingest worker health` and `ingest search` as an operator runs
// them: the real CLI in child processes on the engine the run targets, after a real
// `ingest walk` on the mock tier (started in process by each command, as with no endpoint set).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readHeartbeat } from '../worker/heartbeat.ts';
import { BIN, runIngest } from './helpers/cli.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

let root: string;
let corpus: string;
let target: TestDatabase | null = null;
let env: Record<string, string>;

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-worker-cli-'));
  corpus = path.join(root, 'corpus');
  await mkdir(path.join(corpus, 'forms'), { recursive: true });
  await writeFile(
    path.join(corpus, 'faq.md'),
    '# FAQ\n\nQ: Which quality certification does Northwind Traders hold?\nA: ISO 9001 since 2015.\n',
  );
  await writeFile(path.join(corpus, 'forms', 'tender.md'), '# Tender\n\nWhich quality certification do you hold?\n');
  await writeFile(path.join(root, 'outside.md'), '# Outside\n\nWho is your auditor?\n');
  await writeFile(path.join(root, 'tender.exe'), 'MZ');
  env = {
    INGEST_DATA_DIR: path.join(root, 'data'),
    ENGINE_SOURCE_PATH: corpus,
    INGEST_WORKER_POLL_MS: '50',
    INGEST_WORKER_HEARTBEAT_MS: '100',
    INGEST_WORKER_RETRY_BASE_MS: '10',
    INGEST_LOG_LEVEL: 'error',
  };
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    env.ENGINE_DB_DSN = target.dsn!;
  }
  const walked = await ingest(['walk', corpus]);
  assert.is(walked.status, 0, walked.stderr);
});
test.after(async () => {
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const ingest = (args: string[]) => runIngest(args, env);

async function enqueue(args: string[]): Promise<string> {
  const out = await ingest(['jobs', 'enqueue', ...args]);
  assert.is(out.status, 0, out.stderr);
  return out.stdout.trim();
}

interface LogRecord {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** Runs `ingest worker` (at the default log level) until it has finished `jobs` jobs, then stops it with SIGTERM; its log. */
async function work(jobs: number): Promise<LogRecord[]> {
  const { INGEST_LOG_LEVEL: _, ...defaultLevel } = env;
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...defaultLevel },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (chunk) => (log += chunk));
  const file = path.join(root, 'data', 'worker.heartbeat');
  // Generous: a worker opens the embedded database and the mock tier first, slowly on a busy machine.
  const end = Date.now() + 120_000;
  let healthy = false;
  try {
    for (;;) {
      const beat = await readHeartbeat(file, 10_000);
      if (beat.ok && beat.beat.pid === child.pid && !healthy) {
        const health = await ingest(['worker', 'health']);
        assert.is(health.status, 0, health.stderr);
        assert.match(health.stdout, /"state":"polling"/);
        healthy = true;
      }
      if (
        beat.ok &&
        beat.beat.pid === child.pid &&
        beat.beat.done + beat.beat.failed >= jobs &&
        beat.beat.running === 0
      )
        break;
      if (Date.now() > end) throw new Error(`the worker did not finish its jobs:\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (error) {
    child.kill('SIGKILL'); // a worker left running would keep the test process alive
    throw error;
  }
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.is(code, 0, log);
  return log
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogRecord);
}

/** The one line the worker logs per finished job. */
function finishedJobs(log: LogRecord[]): Record<string, unknown>[] {
  return log
    .filter((r) => r.msg === 'job finished')
    .map(({ job, kind, outcome, durationMs }) => ({ job, kind, outcome, timed: typeof durationMs === 'number' }));
}

test('jobs enqueue builds the payload the platform would; the worker runs it; list, show and retry', async () => {
  const inCorpus = await enqueue(['analyse_form', path.join(corpus, 'forms', 'tender.md')]);
  const outside = await enqueue(['analyse_form', path.join(root, 'outside.md')]);
  const unsupported = await enqueue(['analyse_form', path.join(root, 'tender.exe'), '--max-attempts', '2']);
  const shown = JSON.parse((await ingest(['jobs', 'show', inCorpus])).stdout);
  assert.equal(shown.payload, { form: { path: 'forms/tender.md' } });
  assert.is(shown.status, 'queued');
  const inline = JSON.parse((await ingest(['jobs', 'show', outside])).stdout);
  assert.is(inline.payload.form.inline.filename, 'outside.md');
  const listed = JSON.parse((await ingest(['jobs', 'list', '--status', 'queued', '--json'])).stdout);
  assert.is(listed.length, 3);

  const log = await work(3);
  assert.equal(
    finishedJobs(log).sort((a, b) => String(a.job).localeCompare(String(b.job))),
    [
      { job: inCorpus, kind: 'analyse_form', outcome: 'done', timed: true },
      { job: outside, kind: 'analyse_form', outcome: 'done', timed: true },
      { job: unsupported, kind: 'analyse_form', outcome: 'failed', timed: true },
    ].sort((a, b) => a.job.localeCompare(b.job)),
  );
  const done = JSON.parse((await ingest(['jobs', 'show', inCorpus])).stdout);
  assert.is(done.status, 'done');
  assert.match(done.result.questions[0].text, /quality certification/);
  const failed = JSON.parse((await ingest(['jobs', 'show', unsupported])).stdout);
  assert.is(failed.status, 'failed');
  assert.match(failed.error, /^form_unsupported: /);
  const text = (await ingest(['jobs', 'list'])).stdout;
  assert.match(text, new RegExp(`${unsupported}\\s+analyse_form\\s+failed\\s+attempts 1/2`));

  const retried = await ingest(['jobs', 'retry', unsupported]);
  assert.is(retried.status, 0, retried.stderr);
  assert.is(JSON.parse((await ingest(['jobs', 'show', unsupported])).stdout).status, 'queued');
  const notFailed = await ingest(['jobs', 'retry', inCorpus]);
  assert.is(notFailed.status, 1);
  assert.match(notFailed.stderr, /is done; only a failed job is retried/);
  assert.is((await ingest(['jobs', 'show', '00000000-0000-4000-8000-000000000000'])).status, 1);
});

test('template_fill from the CLI after an analysis, and search shows the same evidence with citations', async () => {
  const analysis = await enqueue(['analyse_form', path.join(corpus, 'forms', 'tender.md')]);
  await work(1);
  const fill = await enqueue(['template_fill', '--analysis', analysis, '--evidence-k', '3']);
  assert.equal(JSON.parse((await ingest(['jobs', 'show', fill])).stdout).payload, {
    analysis_job: analysis,
    evidence_k: 3,
  });
  assert.equal(finishedJobs(await work(1)), [{ job: fill, kind: 'template_fill', outcome: 'done', timed: true }]);
  const result = JSON.parse((await ingest(['jobs', 'show', fill])).stdout).result;
  assert.match(result.answers[0].answer, /ISO 9001/);
  const search = await ingest(['search', 'Which quality certification do you hold?', '--k', '10', '--json']);
  assert.is(search.status, 0, search.stderr);
  const evidence: { id: string; citation: string; source: string }[] = JSON.parse(search.stdout);
  // Search knows no form, so it shows the form's own text too; template_fill left it out.
  assert.ok(evidence.some((e) => e.source === 'forms/tender.md'));
  assert.equal(
    evidence
      .filter((e) => e.source !== 'forms/tender.md')
      .slice(0, 3)
      .map((e) => e.id),
    result.answers[0].evidence.map((e: { id: string }) => e.id),
  );
  assert.match(evidence[0]!.citation, /^record:\/\/source_document\/[0-9a-f-]{36}$/);
  assert.is(evidence[0]!.source, 'faq.md');
  const human = await ingest(['search', 'Which quality certification do you hold?']);
  assert.match(human.stdout, /1\. \[q_a_pair\] score .*\n {3}record:\/\/source_document\/[0-9a-f-]{36} {2}faq\.md\n/);
});

test('usage mistakes exit 2 and name the problem; schemas print as JSON Schema', async () => {
  for (const [args, message] of [
    [['jobs', 'enqueue', 'publish', 'x.md'], /the job must be one of/],
    [['jobs', 'enqueue', 'template_fill'], /give one of FILE, --bucket-key KEY or --analysis JOB_ID/],
    [['jobs', 'list', '--status', 'lost'], /--status must be one of/],
    [['search'], /give a QUERY/],
    [['worker', '--concurrency', '0'], /--concurrency must be/],
  ] as const) {
    const out = await ingest([...args]);
    assert.is(out.status, 2, `${args.join(' ')}: ${out.stderr}`);
    assert.match(out.stderr, message);
  }
  const schema = JSON.parse((await ingest(['jobs', 'schema', 'analyse_form.payload'])).stdout);
  assert.ok(Array.isArray(schema.properties.form.anyOf));
  assert.is((await ingest(['jobs', 'schema', 'nope'])).status, 2);
});

test.run();
