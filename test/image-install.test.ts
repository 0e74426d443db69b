// @engine
// The image's install, tested without a Docker engine (none runs where the tests do): the files
// laid out exactly as the Dockerfile's COPY lines lay them out, its production install run in a
// temporary directory, then its entrypoint started there as serve, worker and mock. A runtime
// import of a dev dependency, or a file the image forgot (a converter's worker script, a
// migration), fails here.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WALK_V8_FLAGS } from '../lib/v8-flags.ts';
import { readHeartbeat } from '../worker/heartbeat.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { makeImagePdf } from '../bench/corpus/scans.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

interface Instruction {
  keyword: string;
  text: string;
}

/** The Dockerfile's stages, each a list of instructions (continuation lines joined, comments dropped). */
function dockerfileStages(source: string): Instruction[][] {
  const stages: Instruction[][] = [];
  const logical = source
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  for (const line of logical) {
    const [keyword, ...rest] = line.split(/\s+/);
    if (keyword === 'FROM') stages.push([]);
    stages.at(-1)!.push({ keyword: keyword!, text: rest.join(' ') });
  }
  return stages;
}

const stages = dockerfileStages(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
const [install, runtime] = [stages[0]!, stages.at(-1)!];
const jsonArgs = (stage: Instruction[], keyword: string): string[] =>
  JSON.parse(stage.find((i) => i.keyword === keyword)!.text.replace(/^.*?CMD\s+/, ''));
/** The sources of a stage's own COPY lines (those from another stage are the install's output). */
const copies = (stage: Instruction[]) =>
  stage
    .filter((i) => i.keyword === 'COPY' && !i.text.startsWith('--from'))
    .map((i) => {
      const parts = i.text.split(/\s+/);
      return { sources: parts.slice(0, -1), target: parts.at(-1)! };
    });

const IMAGE_SHA = 'image-install-test-sha';
/** The runtime stage's ENV, with the build argument given. */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of runtime.filter((i) => i.keyword === 'ENV')) {
    for (const [, name, value] of i.text.matchAll(/(\w+)=(\S+)/g)) env[name!] = value!.replace('$IMAGE_SHA', IMAGE_SHA);
  }
  return env;
}

let layout: string;
let data: string;
let target: TestDatabase | null = null;
const children: ChildProcess[] = [];

test.before(() => {
  layout = mkdtempSync(path.join(tmpdir(), 'ingest-image-'));
  data = mkdtempSync(path.join(tmpdir(), 'ingest-image-data-'));
  const layOut = (stage: Instruction[]) => {
    for (const { sources, target } of copies(stage)) {
      for (const source of sources) {
        const into = target.endsWith('/')
          ? path.join(layout, target, path.basename(source))
          : path.join(layout, target);
        cpSync(path.join(ROOT, source), into, { recursive: true });
      }
    }
  };
  layOut(install);
  // The install stage's npm commands, as written (the cache clean-up only matters to a layer).
  for (const run of install.filter((i) => i.keyword === 'RUN')) {
    for (const command of run.text.split('&&').map((c) => c.trim())) {
      if (!command.startsWith('npm ci')) continue;
      execFileSync('sh', ['-c', command], { cwd: layout, stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 });
    }
  }
  layOut(runtime);
});
test.after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await target?.dispose();
  rmSync(layout, { recursive: true, force: true });
  rmSync(data, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The image's entrypoint without tini (PID 1's job, not the install's), run in the layout. */
function entrypoint(args: string[], env: Record<string, string>): ChildProcess {
  const [tini, separator, node, ...rest] = jsonArgs(runtime, 'ENTRYPOINT');
  assert.equal([tini, separator, node], ['/usr/bin/tini', '--', 'node']);
  const child = spawn(process.execPath, [...rest, ...args], {
    cwd: layout,
    env: { PATH: process.env.PATH ?? '', ...imageEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return child;
}

function firstLineMatching(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (chunk) => (err += chunk));
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = pattern.exec(out);
      if (match) resolve(match);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before ${pattern}: ${out}${err}`)));
  });
}

const stopped = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });

/** The environment of one role: loopback only, this test's data, the run's database. */
async function roleEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  if (process.env.ENGINE_DB_DSN && target === null) target = await openTestDatabase();
  return {
    INGEST_HOST: '127.0.0.1',
    INGEST_DATA_DIR: path.join(data, 'data'),
    ENGINE_SOURCE_PATH: path.join(data, 'corpus'),
    INGEST_LOG_LEVEL: 'warn',
    ...(target?.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
    ...extra,
  };
}

test('the image holds what its COPY lines name, no dev dependency, and runs the walk heap flags', () => {
  const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8');
  for (const { sources } of [...copies(install), ...copies(runtime)]) {
    for (const source of sources) assert.ok(ignored.includes(`!${source}`), `.dockerignore leaves out ${source}`);
  }
  for (const dev of Object.keys(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).devDependencies)) {
    assert.not.ok(existsSync(path.join(layout, 'node_modules', dev)), `dev dependency ${dev} is in the image`);
  }
  for (const left of ['test', 'bench', 'docs', 'examples', '.ingest'])
    assert.not.ok(existsSync(path.join(layout, left)));
  const [, , , ...node] = jsonArgs(runtime, 'ENTRYPOINT');
  assert.equal(node, [...WALK_V8_FLAGS, 'bin/ingest.ts']);
  assert.equal(jsonArgs(runtime, 'CMD'), ['serve']);
  assert.is(imageEnv().IMAGE_SHA, IMAGE_SHA);
});

test('serve answers /health, passes the HEALTHCHECK, and walks the example corpus and a scan on the image install', async () => {
  cpSync(path.join(ROOT, 'examples', 'corpus'), path.join(data, 'corpus'), { recursive: true });
  // OCR's engine, its wasm core and its language data come with the production install.
  for (const data of ['eng/4.0.0_best_int/eng.traineddata.gz', 'osd/4.0.0/osd.traineddata.gz'])
    assert.ok(existsSync(path.join(layout, 'node_modules', '@tesseract.js-data', data)), data);
  writeFileSync(
    path.join(data, 'corpus', 'scan.pdf'),
    await makeImagePdf([{ lines: ['The image reads its scans offline.'] }]),
  );
  const port = await freePort();
  const secret = 'image-install-trigger';
  const env = await roleEnv({ INGEST_PORT: String(port), PIPELINE_TRIGGER_SECRET: secret });
  const serve = entrypoint(['serve'], env);
  const [, url] = await firstLineMatching(serve, /ingest sidecar on (\S+)\n/);
  assert.is((await fetch(`${url}/health`)).status, 200);

  const [node, ...health] = jsonArgs(runtime, 'HEALTHCHECK');
  assert.is(node, 'node');
  const healthcheck = spawn(process.execPath, health, {
    cwd: layout,
    env: { PATH: process.env.PATH ?? '', ...imageEnv(), ...env },
  });
  assert.is(await new Promise((resolve) => healthcheck.once('exit', resolve)), 0);

  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const accepted = await fetch(`${url}/walk`, { method: 'POST', headers, body: '{}' });
  assert.is(accepted.status, 202);
  const { requestId } = (await accepted.json()) as { requestId: string };
  let status: { state: string; counts?: Record<string, number> };
  do {
    await new Promise((r) => setTimeout(r, 100));
    status = (await (await fetch(`${url}/walk-status/${requestId}`, { headers })).json()) as typeof status;
  } while (status.state === 'accepted' || status.state === 'running');
  assert.is(status.state, 'completed', JSON.stringify(status));
  // Every converter of the example corpus (PDF, DOCX, XLSX, HTML, markdown) ran in its pool,
  // and the scan's page was OCRed.
  assert.is(status.counts?.changed, 9, JSON.stringify(status.counts));
  assert.is(status.counts?.failed, 0, JSON.stringify(status.counts));
  assert.is(status.counts?.ocr_pages, 1, JSON.stringify(status.counts));
  // tesseract.js writes the traineddata it loads into its working folder unless told not to.
  assert.equal(
    readdirSync(layout).filter((name) => name.includes('traineddata')),
    [],
  );
  assert.is(await stopped(serve), 0);
});

test('worker claims and finishes a job on the image install', async () => {
  const env = await roleEnv({
    INGEST_WORKER_POLL_MS: '50',
    INGEST_WORKER_HEARTBEAT_MS: '100',
  });
  const form = path.join(data, 'corpus', 'tender.md');
  writeFileSync(form, '# Tender\n\nWhich quality certification do you hold?\n');
  const enqueue = entrypoint(['jobs', 'enqueue', 'analyse_form', form], env);
  const [, job] = await firstLineMatching(enqueue, /^([0-9a-f-]{36})\n/);
  const worker = entrypoint(['worker'], env);
  const heartbeat = path.join(data, 'data', 'worker.heartbeat');
  for (const end = Date.now() + 120_000; ;) {
    const beat = await readHeartbeat(heartbeat, 10_000);
    if (beat.ok && beat.beat.pid === worker.pid && beat.beat.done >= 1) break;
    assert.ok(Date.now() < end, 'the worker did not finish the job');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.is(await stopped(worker), 0);
  const show = entrypoint(['jobs', 'show', job!], env);
  const [shown] = await firstLineMatching(show, /^\{[\s\S]*\}\n$/);
  const record = JSON.parse(shown) as { status: string; result: { questions: unknown[] } };
  assert.is(record.status, 'done', shown);
  assert.ok(record.result.questions.length > 0);
});

test('mock answers a pong on the image install', async () => {
  const mock = entrypoint(['mock', '--port', '0'], await roleEnv());
  const [, url] = await firstLineMatching(mock, /mock model server on (\S+) /);
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'any', max_tokens: 8, messages: [{ role: 'user', content: 'ping' }] }),
  });
  assert.is(response.status, 200);
  assert.match(JSON.stringify(await response.json()), /pong/);
  assert.is(await stopped(mock), 0);
});

test.run();
