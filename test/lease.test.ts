// @engine
// Leases (lib/lease.ts), the writer fence's and the embedded database's lock: a live holder
// keeps one by renewing it; a holder that stopped renewing loses it whatever its pid and
// hostname say, because after a kill -9 a pid may be another process's and a hostname may be
// gone with its container.

import { mock } from 'node:test';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { fencedWalk } from '../engine/trigger/fenced-walk.ts';
import { loadConfig } from '../lib/config.ts';
import { leaseHolder, tryAcquireLease } from '../lib/lease.ts';
import { databaseRunRecorder } from '../lib/runs/record.ts';
import { openTestDatabase } from './helpers/db.ts';

const STALE_MS = 400;
let dir: string;
let file: string;
test.before.each(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ingest-lease-'));
  file = path.join(dir, 'writer.fence');
});
test.after.each(() => rmSync(dir, { recursive: true, force: true }));

const leaseOf = (fields: { pid: number; hostname: string; renewedAgoMs: number }) =>
  JSON.stringify({
    pid: fields.pid,
    hostname: fields.hostname,
    acquiredAt: new Date(Date.now() - fields.renewedAgoMs).toISOString(),
    renewedAt: new Date(Date.now() - fields.renewedAgoMs).toISOString(),
    token: 'someone-else',
  });

test('a holder that renews keeps its lease past the stale time; released, it is free', async () => {
  // The renewal timer and the clock are fake (node:test's mock.timers), so a loaded machine
  // cannot make a renewal late; each renewal's file write is real and awaited as it lands.
  mock.timers.enable({ apis: ['setInterval', 'Date'], now: Date.now() });
  try {
    const hold = await tryAcquireLease(file, { staleMs: STALE_MS });
    assert.ok(hold !== null);
    for (let elapsed = 0; elapsed < STALE_MS * 2.5; elapsed += STALE_MS / 4) {
      mock.timers.tick(STALE_MS / 4);
      const now = new Date().toISOString();
      const giveUp = performance.now() + 5_000;
      while (JSON.parse(await readFile(file, 'utf8')).renewedAt !== now) {
        assert.ok(performance.now() < giveUp, `renewed at ${now}`);
        await new Promise(setImmediate);
      }
    }
    assert.is(await tryAcquireLease(file, { staleMs: STALE_MS }), null, 'still held: it was renewed');
    assert.is((await leaseHolder(file, STALE_MS))?.pid, process.pid);
    await hold.release();
    const next = await tryAcquireLease(file, { staleMs: STALE_MS });
    assert.ok(next !== null);
    await next.release();
  } finally {
    mock.timers.reset();
  }
});

test('a holder that stops renewing loses its lease once the stale time has passed', async () => {
  mock.timers.enable({ apis: ['setInterval', 'Date'], now: Date.now() });
  try {
    const hold = await tryAcquireLease(file, { staleMs: STALE_MS });
    assert.ok(hold !== null);
    // No tick fires the renewal: the clock alone moves past the stale time.
    mock.timers.setTime(Date.now() + STALE_MS - 1);
    assert.is(await tryAcquireLease(file, { staleMs: STALE_MS }), null, 'held until the stale time');
    mock.timers.setTime(Date.now() + 1);
    assert.is(await leaseHolder(file, STALE_MS), null, 'stale at the stale time');
    await hold.release();
  } finally {
    mock.timers.reset();
  }
});

test('a lease not renewed is taken over though its pid is alive on this host (a pid reused)', async () => {
  await writeFile(file, leaseOf({ pid: process.pid, hostname: hostname(), renewedAgoMs: STALE_MS * 2 }));
  const hold = await tryAcquireLease(file, { staleMs: STALE_MS });
  assert.ok(hold !== null);
  assert.not.equal(JSON.parse(await readFile(file, 'utf8')).token, 'someone-else');
  await hold.release();
});

test('a lease written under another hostname: busy while renewed, taken over once stale', async () => {
  await writeFile(file, leaseOf({ pid: 1, hostname: 'a-container-long-gone', renewedAgoMs: 0 }));
  assert.is(await tryAcquireLease(file, { staleMs: STALE_MS }), null);
  await writeFile(file, leaseOf({ pid: 1, hostname: 'a-container-long-gone', renewedAgoMs: STALE_MS * 2 }));
  const hold = await tryAcquireLease(file, { staleMs: STALE_MS });
  assert.ok(hold !== null);
  await hold.release();
});

test('with no stale time (the embedded database lock), only a dead holder frees a lease', async () => {
  await writeFile(file, leaseOf({ pid: process.pid, hostname: hostname(), renewedAgoMs: 3_600_000 }));
  assert.is(await tryAcquireLease(file, { staleMs: Number.POSITIVE_INFINITY }), null, 'old but alive');
  await writeFile(file, leaseOf({ pid: 2 ** 22 + 1, hostname: hostname(), renewedAgoMs: 0 }));
  const hold = await tryAcquireLease(file, { staleMs: Number.POSITIVE_INFINITY });
  assert.ok(hold !== null, 'a dead pid on this host');
  await hold.release();
});

test('a release after a takeover leaves the new holder its lease', async () => {
  const first = await tryAcquireLease(file, { staleMs: STALE_MS });
  assert.ok(first !== null);
  await writeFile(file, leaseOf({ pid: 1, hostname: 'elsewhere', renewedAgoMs: 0 }));
  await first.release();
  assert.is(JSON.parse(await readFile(file, 'utf8')).token, 'someone-else');
});

test('kill -9 the fence holder, a new process under its pid number: the next walk runs within the stale time', async () => {
  const env = { INGEST_DATA_DIR: dir, INGEST_FENCE_STALE_MS: String(STALE_MS), INGEST_LOG_LEVEL: 'silent' };
  const config = loadConfig(env, dir);
  const target = await openTestDatabase();
  const module = (file: string) => JSON.stringify(path.resolve(import.meta.dirname, '..', file));
  // The holder takes the fence of the engine under test: on PostgreSQL the lease row of the same
  // database, on PGlite the lease file (which needs no database of its own).
  const script = `
    const { writerFence } = await import(${module('engine/walk/fence.ts')});
    const { openPostgres } = await import(${module('lib/db/postgres.ts')});
    const dsn = ${JSON.stringify(target.dsn)};
    const db = dsn === null ? { kind: 'pglite' } : await openPostgres(dsn);
    const config = { stateStorePath: ${JSON.stringify(config.stateStorePath)}, fenceStaleMs: ${STALE_MS} };
    if ((await writerFence(config, db).tryAcquire()) === null) throw new Error('the fence was busy');
    process.stdout.write('held\\n');
    setInterval(() => {}, 1000);`;
  const holder = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => holder.stdout.once('data', resolve));
  const log = pino({ level: 'silent' });
  const runs = databaseRunRecorder(target.db, () => {});
  const options = { db: target.db, sourcePath: null, log, runs };
  const pass = async () => ({ status: 'completed' }) as never;
  await sleep(STALE_MS);
  assert.is(await fencedWalk(config, options, pass), null, 'held by a live, renewing holder past its stale time');
  holder.kill('SIGKILL');
  await new Promise((resolve) => holder.once('exit', resolve));
  const killed = Date.now();
  // The pid number now belongs to another live process (this one), as after a container restart:
  // only the stale time frees the fence.
  if (target.dsn === null) {
    const fence = path.join(config.stateStorePath, 'writer.fence');
    const left = JSON.parse(await readFile(fence, 'utf8'));
    await writeFile(fence, JSON.stringify({ ...left, pid: process.pid }));
  } else {
    await target.db.query('UPDATE engine_leases SET holder_pid = $1', [process.pid]);
  }
  let walked = null;
  while (walked === null && Date.now() - killed < STALE_MS * 10) {
    walked = await fencedWalk(config, options, pass);
    if (walked === null) await sleep(STALE_MS / 20);
  }
  const freedAfterMs = Date.now() - killed;
  assert.ok(walked !== null, 'the next walk ran');
  // The holder renewed at most a quarter of the stale time before it died; the rest is polling.
  assert.ok(freedAfterMs <= STALE_MS + STALE_MS / 2, `the fence was freed ${freedAfterMs} ms after the kill`);
  await target.dispose();
});

test.run();
