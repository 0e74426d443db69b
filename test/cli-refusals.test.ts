// Commands that cannot do what they were asked end in one `ingest:` line naming why, with no
// stack, and a non-zero exit (issue 54): a server that cannot listen, the embedded database held
// by another process.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { serveHttp, type LoopbackServer } from './helpers/loopback.ts';
import { runIngest } from './helpers/cli.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';

let root: string;
let occupant: LoopbackServer;
test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-refusals-'));
  occupant = await serveHttp((_req, res) => res.end());
});
test.after.each(async () => {
  await occupant.close();
  rmSync(root, { recursive: true, force: true });
});

/** Asserts the one-line refusal: exit 1, `ingest: cannot listen on ADDRESS: ...`, no stack (the log's records aside). */
function assertListenRefused(run: { status: number | null; stderr: string }, address: string, reason: RegExp): void {
  assert.is(run.status, 1, run.stderr);
  const lines = run.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{"level":'));
  assert.equal(lines.length, 1, run.stderr);
  assert.ok(lines[0]!.startsWith(`ingest: cannot listen on ${address}: `), run.stderr);
  assert.match(lines[0]!, reason);
  assert.not.match(run.stderr, /Unhandled|    at /);
}

test('serve and mock on a port in use: one line naming the address, exit 1', async () => {
  const env = { INGEST_DATA_DIR: path.join(root, 'data') };
  const address = `127.0.0.1:${occupant.port}`;
  for (const command of ['serve', 'mock'])
    assertListenRefused(await runIngest([command, '--port', String(occupant.port)], env), address, /EADDRINUSE/);
});

test('serve and mock on an address this machine does not have: the same', async () => {
  // TEST-NET-1 (RFC 5737): never one of this machine's addresses, and binding it sends nothing.
  const env = { INGEST_DATA_DIR: path.join(root, 'data') };
  for (const command of ['serve', 'mock'])
    assertListenRefused(
      await runIngest([command, '--host', '192.0.2.1', '--port', '0'], env),
      '192.0.2.1:0',
      /EADDRNOTAVAIL/,
    );
});

test('the embedded database open in another process: one line off a terminal, no record with a stack', async () => {
  const dataDir = path.join(root, 'data');
  await seedDataDir(dataDir);
  const holder = await openDatabase(loadConfig({ INGEST_DATA_DIR: dataDir }, root));
  try {
    const run = await runIngest(['feeds', 'list'], { INGEST_DATA_DIR: dataDir });
    assert.is(run.status, 1, run.stderr);
    const lines = run.stderr.split('\n').filter((line) => line !== '');
    assert.is(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /^ingest: the embedded database at .* is open in another process \(pid \d+/);
  } finally {
    await holder.close();
  }
});

test.run();
