// `ingest serve` as real processes: graceful SIGTERM, the writer fence between two sidecars
// sharing one corpus and one engine state directory, and the embedded database's lock.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, giveToUnprivileged, UNPRIVILEGED } from './helpers/cli.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { markdown } from './helpers/walk.ts';

const TRIGGER = 'serve-test-trigger-secret';
let root: string;
const children: ChildProcess[] = [];

test.before.each(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-serve-'));
});
test.after.each(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** Starts `ingest serve` on an ephemeral port; resolves with its URL and its exit. */
async function serve(
  env: Record<string, string>,
  as: Pick<SpawnOptions, 'uid' | 'gid'> = {},
): Promise<{ url: string; child: ChildProcess; exit: Promise<number | null> }> {
  if (env.INGEST_DATA_DIR) await seedDataDir(env.INGEST_DATA_DIR);
  if (as.uid !== undefined) giveToUnprivileged(root);
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', PIPELINE_TRIGGER_SECRET: TRIGGER, INGEST_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
    ...as,
  });
  children.push(child);
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c) => {
      out += c;
      const match = /on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve({ url: match[1]!, child, exit });
    });
    void exit.then((code) => reject(new Error(`serve exited early (${code})`)));
  });
}

async function walkStatus(url: string, requestId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const status = (await (
      await fetch(`${url}/walk-status/${requestId}`, { headers: { authorization: `Bearer ${TRIGGER}` } })
    ).json()) as Record<string, unknown>;
    if (!['accepted', 'running'].includes(status.state as string)) return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const startWalk = async (url: string) =>
  (
    (await (
      await fetch(`${url}/walk`, { method: 'POST', headers: { authorization: `Bearer ${TRIGGER}` } })
    ).json()) as { requestId: string }
  ).requestId;

test('SIGTERM stops the sidecar cleanly with exit code 0', async () => {
  const corpus = path.join(root, 'corpus');
  await cp(path.resolve(import.meta.dirname, '..', 'examples', 'corpus'), corpus, { recursive: true });
  const sidecar = await serve({ INGEST_DATA_DIR: path.join(root, 'data'), ENGINE_SOURCE_PATH: corpus });
  assert.is((await fetch(`${sidecar.url}/health`)).status, 200);
  const requestId = await startWalk(sidecar.url);
  assert.is((await walkStatus(sidecar.url, requestId)).state, 'completed');
  sidecar.child.kill('SIGTERM');
  assert.is(await sidecar.exit, 0);
});

test('two sidecars on one corpus: the writer fence lets one walk and ends the other as fence_busy', async () => {
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  for (let i = 0; i < 120; i++) await writeFile(path.join(corpus, `doc-${i}.md`), markdown(`Doc ${i}`, 6));
  const shared = { ENGINE_SOURCE_PATH: corpus, ENGINE_DB: path.join(root, 'state') };
  const [a, b] = await Promise.all([
    serve({ ...shared, INGEST_DATA_DIR: path.join(root, 'data-a') }),
    serve({ ...shared, INGEST_DATA_DIR: path.join(root, 'data-b') }),
  ]);
  const first = await startWalk(a.url);
  // "running" is reported once the walk holds the fence; the cold walk of 120 documents
  // lasts seconds, so the second request arrives while it is held.
  for (;;) {
    const status = (await (
      await fetch(`${a.url}/walk-status/${first}`, { headers: { authorization: `Bearer ${TRIGGER}` } })
    ).json()) as { state: string };
    if (status.state === 'running') break;
    assert.is(status.state, 'accepted', 'the first walk was still going when the second was asked for');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const second = await startWalk(b.url);
  const states = [(await walkStatus(a.url, first)).state, (await walkStatus(b.url, second)).state];
  assert.equal(states, ['completed', 'fence_busy']);
  // With the fence free again, the second sidecar walks.
  assert.is((await walkStatus(b.url, await startWalk(b.url))).state, 'completed');
});

test('a CLI walk on the embedded database a sidecar holds open is refused by name and changes nothing', async () => {
  const corpus = path.join(root, 'corpus');
  await cp(path.resolve(import.meta.dirname, '..', 'examples', 'corpus'), corpus, { recursive: true });
  const env = { INGEST_DATA_DIR: path.join(root, 'data'), ENGINE_SOURCE_PATH: corpus };
  const sidecar = await serve(env);
  const walk = spawn(process.execPath, [BIN, 'walk'], {
    env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  walk.stderr!.on('data', (c) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => walk.on('exit', resolve));
  assert.is(code, 1);
  assert.match(stderr, /embedded database at .* is open in another process \(pid \d+/);
  // The sidecar still owns a healthy database: its own walk sees every document as new.
  const status = await walkStatus(sidecar.url, await startWalk(sidecar.url));
  assert.is(status.state, 'completed');
  assert.is((status.counts as Record<string, number>).changed, 8);
  sidecar.child.kill('SIGTERM');
  assert.is(await sidecar.exit, 0);
  // Released on shutdown: the CLI may open it now.
  const after = spawn(process.execPath, [BIN, 'walk'], {
    env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'silent', ...env },
    stdio: 'ignore',
  });
  assert.is(await new Promise((resolve) => after.on('exit', resolve)), 0);
});

test('/walk-status names a folder the walk could not read, whose documents keep their rows', async () => {
  const corpus = path.join(root, 'corpus');
  for (const name of ['a.md', 'private/one.md', 'private/two.md']) {
    await mkdir(path.dirname(path.join(corpus, name)), { recursive: true });
    await writeFile(path.join(corpus, name), markdown(`Document ${name}`, 3));
  }
  const sidecar = await serve(
    { INGEST_DATA_DIR: path.join(root, 'data'), ENGINE_SOURCE_PATH: corpus },
    UNPRIVILEGED ?? {},
  );
  assert.is((await walkStatus(sidecar.url, await startWalk(sidecar.url))).state, 'completed');
  chmodSync(path.join(corpus, 'private'), 0o000);
  const shut = await walkStatus(sidecar.url, await startWalk(sidecar.url)).finally(() =>
    chmodSync(path.join(corpus, 'private'), 0o755),
  );
  assert.is(shut.state, 'completed');
  assert.equal(
    [(shut.counts as Record<string, number>).removed, (shut.counts as Record<string, number>).unchanged],
    [0, 1],
  );
  assert.equal(
    (shut.warnings as { name: string; message: string }[]).map((w) => [w.name, w.message.split(';')[0]]),
    [['unlisted_directory', 'private: cannot read directory: EACCES']],
  );
  sidecar.child.kill('SIGTERM');
  assert.is(await sidecar.exit, 0);
});

test.run();
