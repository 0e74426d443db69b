// @engine
// The sidecar as the platform sees it: the real server on an ephemeral loopback port, the
// engine in its worker thread, requests from a real HTTP client (fetch).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { cp, readFile, realpath, symlink, writeFile, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig, type Config } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { startSidecar, type Sidecar } from '../http/server.ts';
import { publishedBundle } from '../stages/producer/bundle-dir.ts';
import { checkBundle } from '../stages/producer/check.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { holdWriterFence } from './helpers/fence.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { markdown } from './helpers/walk.ts';
import { startTestS3 } from './helpers/s3.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { makeImagePdf } from '../bench/corpus/scans.ts';

const TRIGGER = 'trigger-secret-for-http-tests';
const EXTRACT = 'extract-token-for-http-tests';
const EXAMPLES = path.resolve(import.meta.dirname, '..', 'examples', 'corpus');

let root: string;
let corpus: string;
let target: TestDatabase;
let sidecar: Sidecar | null = null;
let config: Config;

// Tier 1 as `ingest serve` starts it, on this thread: the engine thread inherits its variables.
let tier: MockTier;
test.before(async () => {
  tier = await startMockTier();
});
test.after(async () => {
  await tier.stop();
});

async function start(env: Record<string, string> = {}) {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-http-'));
  corpus = path.join(root, 'corpus');
  await cp(EXAMPLES, corpus, { recursive: true });
  target = await openTestDatabase();
  await seedDataDir(path.join(root, 'data'));
  await startOn(env);
}

/** The sidecar on this test's data directory, corpus and database (again, after a stop). */
async function startOn(env: Record<string, string>) {
  config = loadConfig(
    {
      INGEST_DATA_DIR: path.join(root, 'data'),
      ENGINE_SOURCE_PATH: corpus,
      PIPELINE_TRIGGER_SECRET: TRIGGER,
      EXTRACT_API_TOKEN: EXTRACT,
      INGEST_PORT: '0',
      INGEST_LOG_LEVEL: 'silent',
      // The producer chains after a walk only in the tests of POST /producer-run.
      INGEST_PRODUCER_AFTER_WALK: 'false',
      ...(target.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
      ...env,
    },
    root,
  );
  sidecar = await startSidecar(config, pino({ level: 'silent' }));
}
test.after.each(async () => {
  await sidecar?.stop(5_000);
  sidecar = null;
  await target.dispose();
  rmSync(root, { recursive: true, force: true });
});

const trigger = { authorization: `Bearer ${TRIGGER}` };
const post = (route: string, init: RequestInit = {}) => fetch(`${sidecar!.url}${route}`, { method: 'POST', ...init });

async function startWalk(body?: object): Promise<string> {
  const accepted = await post('/walk', {
    headers: { ...trigger, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  assert.is(accepted.status, 202);
  return ((await accepted.json()) as { requestId: string }).requestId;
}

async function walkStatus(requestId: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${sidecar!.url}/walk-status/${requestId}`, { headers: trigger })).json()) as Record<
    string,
    unknown
  >;
}

/** Polls until the walk's state is not one of `states`. */
async function walkPast(requestId: string, states = ['accepted', 'running']): Promise<Record<string, unknown>> {
  for (;;) {
    const status = await walkStatus(requestId);
    if (!states.includes(status.state as string)) return status;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

async function walkToEnd(body?: object): Promise<Record<string, unknown>> {
  return walkPast(await startWalk(body));
}

function stageForm(destPath: string, content = '# Staged\n\nBody.\n'): FormData {
  const form = new FormData();
  form.set('destPath', destPath);
  form.set('file', new Blob([content]), 'upload.md');
  return form;
}

function corpusFiles(): string[] {
  return readdirSync(corpus, { recursive: true, encoding: 'utf8' }).sort();
}

test('health is 200 while the engine worker lives and 503 after it died; boot never walks', async () => {
  await start();
  assert.is((await fetch(`${sidecar!.url}/health`)).status, 200);
  const first = await walkToEnd();
  assert.is((first.counts as Record<string, number>).changed, 8, 'booting the sidecar walked nothing before this walk');
  await sidecar!.engine.terminate();
  assert.is((await fetch(`${sidecar!.url}/health`)).status, 503);
});

test('a walk is accepted with 202, runs in the worker, and ends completed with its opId', async () => {
  await start();
  const status = await walkToEnd();
  assert.is(status.state, 'completed');
  assert.match(String(status.opId), /^[0-9a-f-]{36}$/);
  assert.equal(status.counts, {
    seen: 8,
    changed: 8,
    unchanged: 0,
    failed: 0,
    dropped: 0,
    skipped: 0,
    removed: 0,
    ...(status.counts as object),
  });
  assert.is((status.counts as Record<string, number>).changed, 8);
  assert.is((status.counts as Record<string, number>).rows_deleted, 0, "/walk-status carries the run record's counts");
  assert.is(status.stage5FailureInjected, undefined);
});

test('an emptied corpus: /walk-status names the refused removal; allowed in the body, the next walk removes', async () => {
  await start();
  await walkToEnd();
  await rm(corpus, { recursive: true });
  await mkdir(corpus);
  const refused = await walkToEnd();
  assert.is(refused.state, 'completed');
  assert.equal(
    (refused.warnings as { name: string }[]).map((w) => w.name),
    ['mass_removal_refused'],
  );
  assert.is((refused.counts as Record<string, number>).removed, 0);
  const bad = await post('/walk', {
    headers: { ...trigger, 'content-type': 'application/json' },
    body: JSON.stringify({ allow_mass_removal: 'yes' }),
  });
  assert.is(bad.status, 400);
  assert.is(((await bad.json()) as { error: string }).error, 'invalid_field');
  const allowed = await walkToEnd({ allow_mass_removal: true });
  assert.equal([allowed.warnings, (allowed.counts as Record<string, number>).removed], [undefined, 8]);
});

test('read_scans in the body reads the scans a walk with OCR off left unread; a plain walk does not', async () => {
  await start({ INGEST_OCR: 'off' });
  await writeFile(path.join(corpus, 'scan.pdf'), await makeImagePdf([{ lines: ['Harbour Freight pays monthly.'] }]));
  const off = await walkToEnd();
  assert.equal(
    (off.warnings as { name: string; path?: string }[]).filter((w) => w.name === 'no_text_layer').map((w) => w.path),
    ['scan.pdf'],
  );
  await sidecar!.stop(5_000);
  await startOn({ INGEST_OCR: 'on', INGEST_OCR_WORKERS: '1' });
  const plain = (await walkToEnd()).counts as Record<string, number>;
  assert.equal([plain.unchanged, plain.ocr_pages], [9, undefined]);
  const reading = (await walkToEnd({ read_scans: true })).counts as Record<string, number>;
  assert.equal([reading.changed, reading.ocr_pages], [1, 1]);
  const { rows } = await readWhileStopped((db) =>
    db.query<{ text: string }>(
      `SELECT c.text FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id WHERE d.rel_path = 'scan.pdf'`,
    ),
  );
  assert.match(rows.map((r) => r.text).join(' '), /Harbour Freight pays monthly/);
});

test('auth: 503 with the secret unset, 401 without or with a wrong bearer, CRON_SECRET never accepted', async () => {
  await start({ CRON_SECRET: 'cron-secret-value', EXTRACT_API_TOKEN: '' });
  assert.is((await post('/walk', { headers: { authorization: 'Bearer wrong' } })).status, 401);
  assert.is((await post('/walk')).status, 401);
  assert.is((await post('/walk', { headers: { authorization: 'Bearer cron-secret-value' } })).status, 401);
  assert.is((await fetch(`${sidecar!.url}/walk-status/x`)).status, 401);
  const extract = await post('/extract', {
    headers: { authorization: 'Bearer anything', 'content-type': 'text/html' },
    body: '<p>x</p>',
  });
  assert.is(extract.status, 503);
  assert.equal(await extract.json(), {
    error: 'extract_disabled',
    message: 'EXTRACT_API_TOKEN is not configured on this sidecar; the route is closed',
  });
});

test('a second walk while one runs is 409; an unknown requestId is 404; bad bodies are named 400s', async () => {
  await start();
  const first = await post('/walk', { headers: trigger });
  assert.is(first.status, 202);
  const second = await post('/walk', { headers: trigger });
  assert.is(second.status, 409);
  assert.is(((await second.json()) as { error: string }).error, 'walk_in_progress');
  assert.is((await fetch(`${sidecar!.url}/walk-status/no-such-walk`, { headers: trigger })).status, 404);
  for (const body of ['not json', '[]', '{"full_reprocess": "yes"}', '{"other": 1}']) {
    const response = await post('/walk', { headers: trigger, body });
    assert.is(response.status, 400, body);
  }
});

test('a busy writer fence ends the walk as fence_busy with no pass', async () => {
  await start();
  // A live holder: this very process, as another writer on the same volume or database would be.
  const other = await holdWriterFence(path.join(root, 'data', 'state'), target.db);
  const staged = await post('/stage', { body: stageForm('inbox/note.md?failStage5=embedder') });
  assert.is(staged.status, 201);
  const status = await walkToEnd();
  assert.is(status.state, 'fence_busy');
  assert.is(status.opId, undefined);
  // The directive goes with the request that consumed it
  // (docs/behaviour/states.md#failure-directive), and the entry says so.
  assert.equal([status.stage5DirectiveConsumed, status.stage5FailureInjected], ['embedder', undefined]);
  await other.release();
  const after = await walkToEnd();
  assert.is((after.counts as Record<string, number>).changed, 9, 'the fence_busy request performed no pass');
  assert.equal([after.stage5DirectiveConsumed, after.warnings], [undefined, undefined], 'nor left the directive armed');
});

test('/stage during a walk answers at once and loses nothing: each staged file is walked by this walk or the next', async () => {
  const DOCS = 1000;
  const STAGED = 200;
  await start();
  for (let i = 0; i < DOCS; i++) await writeFile(path.join(corpus, `bulk-${i}.md`), markdown(`Bulk ${i}`, 2));
  const requestId = await startWalk();
  assert.is((await walkPast(requestId, ['accepted'])).state, 'running');
  for (let i = 0; i < STAGED; i++) {
    const staged = await post('/stage', { body: stageForm(`staged/s-${i}.md`, `# Staged ${i}\n\nBody ${i}.\n`) });
    assert.is(staged.status, 201, await staged.text());
  }
  assert.is((await walkStatus(requestId)).state, 'running', 'every file was staged while the walk ran');
  const first = (await walkPast(requestId)).counts as Record<string, number>;
  const second = (await walkToEnd()).counts as Record<string, number>;
  const third = (await walkToEnd()).counts as Record<string, number>;
  const total = 8 + DOCS + STAGED;
  assert.is(first.changed! + second.changed!, total, 'each file was walked once');
  assert.equal([first.failed, second.failed, third.unchanged, third.changed], [0, 0, total, 0]);
});

test('/stage writes atomically, echoes the path, keeps # and punctuation verbatim, and arms the directive for one walk', async () => {
  await start();
  const staged = await post('/stage', { body: stageForm('inbox/r&d #2 (draft).md?failStage5=embedder') });
  assert.is(staged.status, 201);
  assert.equal(await staged.json(), { path: 'inbox/r&d #2 (draft).md', bytes: 16, failStage5: 'embedder' });
  assert.is(await readFile(path.join(corpus, 'inbox', 'r&d #2 (draft).md'), 'utf8'), '# Staged\n\nBody.\n');
  assert.not.ok(
    corpusFiles().some((f) => f.includes('.stage-')),
    'no temp file left behind',
  );
  const injected = await walkToEnd();
  assert.equal([injected.state, injected.stage5FailureInjected], ['completed', 'embedder']);
  assert.equal(
    (injected.warnings as { name: string }[]).map((w) => w.name),
    ['entity_resolution_failed', 'qa_dedup_failed'],
    'stage 5, both passes, failed on the embedder and the walk completed',
  );
  assert.is((injected.counts as Record<string, number>).entity_resolution_names, undefined);
  assert.is((injected.counts as Record<string, number>).qa_dedup_pairs, undefined);
  const next = await walkToEnd();
  assert.is(next.stage5FailureInjected, undefined, 'one-shot: the next walk runs clean');
  assert.is(next.warnings, undefined);
  assert.ok(
    (next.counts as Record<string, number>).entity_resolution_names! > 0,
    'the next walk resolved the names the failed pass left',
  );
  assert.ok(
    (next.counts as Record<string, number>).qa_dedup_pairs! > 0,
    'and looked at the Q&A pairs the failed proposer left',
  );
});

test('failStage5=pair_resolver fails stage 5 on the pair resolver for one walk; the credentials come back', async () => {
  await start();
  // Two spellings of one firm that only the pair resolver can join.
  await post('/stage', { body: stageForm('acme-a.md', '# Lease\n\nAcme Trading Company signed the lease.\n') });
  const staged = await post('/stage', {
    body: stageForm('acme-b.md?failStage5=pair_resolver', '# Rent\n\nAcme Tradng Company paid the rent.\n'),
  });
  assert.is(staged.status, 201);
  const injected = await walkToEnd();
  assert.equal([injected.state, injected.stage5FailureInjected], ['completed', 'pair_resolver']);
  const warnings = injected.warnings as { name: string; message: string }[];
  assert.equal(
    warnings.map((w) => w.name),
    ['entity_resolution_failed', 'qa_dedup_failed'],
  );
  assert.match(warnings[0]!.message, /401|auth/i);
  assert.match(warnings[1]!.message, /failStage5/);
  const next = await walkToEnd();
  assert.equal([next.stage5FailureInjected, next.warnings], [undefined, undefined]);
  const counts = next.counts as Record<string, number>;
  assert.ok(
    counts.entity_resolution_joined_by_resolver! >= 1,
    'the next walk asked the resolver, credentials restored',
  );
});

test('/stage refuses a peer that is not on loopback with a named 403 and writes nothing', async () => {
  await start();
  // The peer address as the server sees it: what a connection from another host would carry.
  sidecar!.server.prependListener('connection', (socket) =>
    Object.defineProperty(socket, 'remoteAddress', { value: '192.0.2.10' }),
  );
  const before = corpusFiles();
  const response = await post('/stage', { body: stageForm('inbox/remote.md') });
  assert.is(response.status, 403);
  assert.is(((await response.json()) as { error: string }).error, 'loopback_only');
  assert.equal(corpusFiles(), before);
});

test('/stage directive errors and path escapes are named 400s that write nothing', async () => {
  await start();
  const before = corpusFiles();
  const cases: [string, string][] = [
    ['a.md?other=1', 'unknown_suffix'],
    ['?failStage5=embedder', 'directive_without_path'],
    ['a.md?failStage5', 'directive_missing_value'],
    ['a.md?failStage5=all', 'unknown_mode'],
    ['../outside.md', 'dest_path_invalid'],
    ['/abs.md', 'dest_path_invalid'],
    ['%2e%2e/x.md', 'dest_path_invalid'],
    ['a\u0000b.md', 'dest_path_invalid'],
    ['a\\b.md', 'dest_path_invalid'],
  ];
  for (const [destPath, error] of cases) {
    const response = await post('/stage', { body: stageForm(destPath) });
    assert.is(response.status, 400, destPath);
    const body = (await response.json()) as { error: string; valid_modes?: string[] };
    assert.is(body.error, error, destPath);
    if (error.includes('directive') || error.includes('suffix') || error.includes('mode'))
      assert.equal(body.valid_modes, ['embedder', 'pair_resolver']);
  }
  assert.equal(corpusFiles(), before);
  assert.is(readdirSync(root).includes('outside.md'), false);
  const injected = await walkToEnd();
  assert.is(injected.stage5FailureInjected, undefined, 'no refused request armed the directive');
});

test('/extract: HTML or JSON in, {text, verdict, warnings} out; 413 past 20 MB; 415 for other types', async () => {
  await start();
  const headers = { authorization: `Bearer ${EXTRACT}` };
  const html = await post('/extract', {
    headers: { ...headers, 'content-type': 'text/html; charset=utf-8' },
    body: '<html><body><h1>Title</h1><p>Body text.</p><script>x()</script></body></html>',
  });
  assert.is(html.status, 200);
  const out = (await html.json()) as { text: string; verdict: string; warnings: string[] };
  assert.is(out.text, '# Title\n\nBody text.');
  assert.ok(['ok', 'thin'].includes(out.verdict));
  // A page that is not an article says what it is in a warning; the body keeps its three fields.
  const post3 = (n: number) =>
    `<div class="post"><a href="/u/${n}">user${n}</a><p>Reply ${n}: a few words of advice on the first telescope to buy. A small refractor suits a beginner best.</p></div>`;
  const forum = await post('/extract', {
    headers: { ...headers, 'content-type': 'text/html' },
    body: `<html><body><div class="thread">${[1, 2, 3].map(post3).join('')}</div></body></html>`,
  });
  const thread = (await forum.json()) as Record<string, unknown>;
  assert.equal(Object.keys(thread).sort(), ['text', 'verdict', 'warnings']);
  assert.ok((thread.warnings as string[]).includes('forum_page'), JSON.stringify(thread));
  assert.ok((thread.text as string).includes('Reply 3:'));
  const json = await post('/extract', {
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ html: '<p>from json</p>' }),
  });
  assert.is(((await json.json()) as { text: string }).text, 'from json');
  const big = await post('/extract', {
    headers: { ...headers, 'content-type': 'text/html' },
    body: new Uint8Array(20 * 1024 * 1024 + 1),
  });
  assert.is(big.status, 413);
  assert.is((await post('/extract', { headers: { ...headers, 'content-type': 'image/png' }, body: 'x' })).status, 415);
});

test('rate limits answer 429 with Retry-After; /producer-run has a limit of its own', async () => {
  await start({ INGEST_RATE_LIMIT_EXTRACT: '2', INGEST_RATE_LIMIT_PRODUCER_RUN: '1' });
  const headers = { authorization: `Bearer ${EXTRACT}`, 'content-type': 'text/html' };
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await post('/extract', { headers, body: '<p>x</p>' })).status);
  assert.equal(statuses.slice(0, 2), [200, 200]);
  const limited = await post('/extract', { headers, body: '<p>x</p>' });
  assert.is(limited.status, 429);
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  assert.is((await post('/producer-run', { headers: trigger })).status, 202);
  const producer = await post('/producer-run', { headers: trigger });
  assert.is(producer.status, 429);
  assert.is(((await producer.json()) as { error: string }).error, 'rate_limited');
});

test('a walk chains a producer run; POST /producer-run answers 202 with its op_id, 409 while it runs, 400 to a bad body', async () => {
  await start({ INGEST_PRODUCER_AFTER_WALK: 'true' });
  assert.is((await walkToEnd()).state, 'completed');
  const published = () => realpath(publishedBundle(config.bundle.dir)).catch(() => null);
  /** Waits for a bundle other than `before` to be published. */
  const republished = async (before: string | null) => {
    for (let i = 0; i < 600 && (await published()) === before; i++) await new Promise((r) => setTimeout(r, 100));
    return published();
  };
  const chained = await republished(null);
  assert.ok(chained !== null, 'the clean walk chained a run that published a bundle');
  // The chained run may still be recording its end after publishing: while it is, both are 409.
  let answers: Response[];
  for (let tries = 0; ; tries++) {
    answers = await Promise.all([1, 2].map(() => post('/producer-run', { headers: trigger })));
    if (answers.some((a) => a.status !== 409) || tries === 100) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(answers.map((a) => a.status).sort(), [202, 409]);
  const accepted = (await answers.find((a) => a.status === 202)!.json()) as { op_id: string; status: string };
  assert.is(accepted.status, 'accepted');
  const refused = (await answers.find((a) => a.status === 409)!.json()) as { error: string };
  assert.is(refused.error, 'producer_in_progress');
  const bad = await post('/producer-run', {
    headers: { ...trigger, 'content-type': 'application/json' },
    body: '{"redraft":"yes"}',
  });
  assert.is(bad.status, 400);
  // The embedded database is the sidecar's alone: read it with the sidecar stopped (which waits
  // for the forced run to end).
  const { runs, run, check } = await readWhileStopped(async (db) => ({
    runs: (await db.query("SELECT 1 FROM pipeline_runs WHERE flow = 'producer'")).rows.length,
    run: (
      await db.query<{ flow: string; status: string; result: { counts: Record<string, number> } }>(
        'SELECT flow, status, result FROM pipeline_runs WHERE op_id = $1',
        [accepted.op_id],
      )
    ).rows[0],
    check: await checkBundle(publishedBundle(config.bundle.dir), db),
  }));
  assert.is(runs, 2, 'the chained run and the forced one');
  assert.is(run?.flow, 'producer');
  assert.is(run?.status, 'completed');
  assert.is(run!.result.counts.files_written, 0);
  assert.is(await published(), chained, 'the forced run found nothing new: the published version is kept');
  const concepts = run!.result.counts.concepts!;
  assert.ok(concepts > 0, 'the example corpus names entities in several documents');
  assert.equal(check.problems, []);
  assert.is(check.concepts, concepts);
});

test('failed authentications count against the client: past the limit a guess is 429, not another 401', async () => {
  await start({ INGEST_RATE_LIMIT_AUTH_FAILURES: '3' });
  const wrong = { authorization: 'Bearer guess' };
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await post('/walk', { headers: wrong })).status);
  assert.equal(statuses, [401, 401, 401]);
  const limited = await fetch(`${sidecar!.url}/walk-status/any`, { headers: wrong });
  assert.is(limited.status, 429, 'on every authenticated route');
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  assert.is(((await limited.json()) as { error: string }).error, 'rate_limited');
});

test('/walk-status has a limit of its own', async () => {
  await start({ INGEST_RATE_LIMIT_WALK_STATUS: '2' });
  const statuses = [];
  for (let i = 0; i < 3; i++)
    statuses.push((await fetch(`${sidecar!.url}/walk-status/x`, { headers: trigger })).status);
  assert.equal(statuses, [404, 404, 429]);
});

test('behind a trusted proxy each client has its own bucket; without the setting its header is ignored', async () => {
  const guesses = async (from: string) => {
    const headers = { authorization: 'Bearer guess', 'x-forwarded-for': `198.51.100.1, ${from}` };
    return (await post('/walk', { headers })).status;
  };
  await start({ INGEST_RATE_LIMIT_AUTH_FAILURES: '2', INGEST_TRUSTED_PROXY_HEADER: 'X-Forwarded-For' });
  assert.equal(
    [await guesses('203.0.113.5'), await guesses('203.0.113.5'), await guesses('203.0.113.5')],
    [401, 401, 429],
  );
  assert.is(await guesses('203.0.113.6'), 401, 'another client behind the same proxy');
  await sidecar!.stop(5_000);
  await target.dispose();
  rmSync(root, { recursive: true, force: true });
  await start({ INGEST_RATE_LIMIT_AUTH_FAILURES: '2' });
  assert.equal(
    [await guesses('203.0.113.5'), await guesses('203.0.113.6'), await guesses('203.0.113.7')],
    [401, 401, 429],
  );
});

test('the registry keeps the last 50 walks: the 51st evicts the first', async () => {
  await start({ INGEST_RATE_LIMIT_WALK: '100' });
  const ids: string[] = [];
  for (let i = 0; i < 51; i++) {
    const status = await walkToEnd();
    assert.is(status.state, 'completed');
    ids.push(status.requestId as string);
  }
  assert.is((await fetch(`${sidecar!.url}/walk-status/${ids[0]}`, { headers: trigger })).status, 404);
  assert.is((await fetch(`${sidecar!.url}/walk-status/${ids[1]}`, { headers: trigger })).status, 200);
});

test('with a corpus bucket, /walk pull-syncs inside the fence before its pass and /stage writes through', async () => {
  const s3 = await startTestS3();
  try {
    const examples = readdirSync(EXAMPLES, { recursive: true, encoding: 'utf8' }).filter((name) => name.includes('.'));
    for (const name of examples) await s3.put(`docs/${name}`, await readFile(path.join(EXAMPLES, name)));
    await start(s3.env('docs'));
    await writeFile(path.join(corpus, 'stray.md'), '# Only in the working copy\n\nGone after the sync.\n');
    const first = await walkToEnd();
    assert.is(first.state, 'completed');
    const counts = first.counts as Record<string, number>;
    assert.equal([counts.sync_downloaded, counts.sync_removed, counts.changed], [8, 1, 8]);
    assert.not.ok(corpusFiles().includes('stray.md'), 'the bucket is authoritative');

    // Staged bytes reach the bucket before the working copy, and are not fetched back.
    const staged = await post('/stage', { body: stageForm('inbox/new.md', '# New\n\nStaged through the bucket.\n') });
    assert.is(staged.status, 201);
    assert.is(await s3.get('docs/inbox/new.md'), '# New\n\nStaged through the bucket.\n');
    await s3.remove(`docs/${examples.find((name) => name.endsWith('.md'))}`);
    const second = (await walkToEnd()).counts as Record<string, number>;
    assert.equal([second.sync_downloaded, second.sync_unchanged, second.sync_removed], [0, 8, 1]);
    assert.equal([second.changed, second.removed], [1, 1], 'the staged file was walked and the deleted one cleaned up');
  } finally {
    await s3.close();
  }
});

test('/stage with an unreachable corpus bucket is a 502 and writes nothing locally', async () => {
  const s3 = await startTestS3();
  await s3.close();
  await start(s3.env('docs'));
  const before = corpusFiles();
  const response = await post('/stage', { body: stageForm('inbox/lost.md') });
  assert.is(response.status, 502);
  assert.is(((await response.json()) as { error: string }).error, 'bucket_write_failed');
  assert.equal(corpusFiles(), before);
});

test('unknown routes are a JSON 404', async () => {
  await start();
  const response = await fetch(`${sidecar!.url}/nope`);
  assert.is(response.status, 404);
  assert.is(((await response.json()) as { error: string }).error, 'not_found');
});

/** Reads the sidecar's database with the sidecar stopped (an embedded one is open in one process only), then restarts it. */
async function readWhileStopped<T>(read: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T> {
  await sidecar!.stop(5_000);
  const db = await openDatabase(config);
  try {
    return await read(db);
  } finally {
    await db.close();
    sidecar = await startSidecar(config, pino({ level: 'silent' }));
  }
}

const merge = (body: unknown, headers: Record<string, string> = trigger) =>
  post('/entities/merge', { headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('POST /entities/merge merges and pins over HTTP; bad requests are named 4xx', async () => {
  await start();
  await post('/stage', { body: stageForm('acme-a.md', '# a\n\nAcme Trading Company signed the lease.\n') });
  await post('/stage', { body: stageForm('acme-b.md', '# b\n\nWestfield Holdings Group paid the rent.\n') });
  assert.is((await walkToEnd()).state, 'completed');
  const ids = await readWhileStopped(async (db) => {
    const { rows } = await db.query<{ canonical_name: string; id: string }>(
      "SELECT canonical_name, id::text FROM entity_mentions WHERE canonical_name IN ('Acme Trading Company', 'Westfield Holdings Group')",
    );
    return Object.fromEntries(rows.map((r) => [r.canonical_name, r.id]));
  });
  const into = ids['Acme Trading Company']!;
  const other = ids['Westfield Holdings Group']!;
  assert.is((await merge({ into, mentions: [other] }, {})).status, 401);
  const refused = [
    [{ into, mentions: [] }, 400, 'invalid_field'],
    [{ into: 'nope', mentions: [other] }, 400, 'invalid_field'],
    [{ into, mentions: [other], also: 1 }, 400, 'unknown_field'],
    [{ into, mentions: ['00000000-0000-4000-8000-000000000000'] }, 404, 'mention_not_found'],
  ] as const;
  for (const [body, status, error] of refused) {
    const res = await merge(body);
    assert.equal([res.status, ((await res.json()) as { error: string }).error], [status, error], JSON.stringify(body));
  }
  const merged = await merge({ into, mentions: [other] });
  assert.is(merged.status, 200);
  assert.equal(await merged.json(), { merged: 1, mentions_pinned: 2 });
  const after = await readWhileStopped(async (db) => {
    const { rows } = await db.query<{ canonical_name: string; pinned: boolean }>(
      `SELECT canonical_name, (metadata ->> 'curation_pinned')::boolean AS pinned FROM entity_mentions m
         JOIN source_documents d ON d.id = m.source_document_id WHERE d.rel_path = 'acme-b.md'`,
    );
    return rows;
  });
  assert.equal(after, [{ canonical_name: 'Acme Trading Company', pinned: true }]);
  // Not publicly routed: a peer off loopback is refused even with the bearer.
  sidecar!.server.prependListener('connection', (socket) =>
    Object.defineProperty(socket, 'remoteAddress', { value: '192.0.2.10' }),
  );
  const far = await merge({ into, mentions: [other] });
  assert.equal([far.status, ((await far.json()) as { error: string }).error], [403, 'loopback_only']);
});

test('/walk-status names the links that lead outside the corpus', async () => {
  await start();
  await writeFile(path.join(root, 'outside.md'), '# Outside\n\nNot in the corpus.\n');
  await symlink(path.join(root, 'outside.md'), path.join(corpus, 'escape.md'));
  const status = await walkToEnd();
  assert.is(status.state, 'completed');
  assert.equal(status.warnings, [
    {
      name: 'links_outside_corpus',
      message: '1 symbolic link leads outside the corpus and was not walked: escape.md',
    },
  ]);
});

test.run();
