// The embedded database's own process. PGlite runs PostgreSQL as WebAssembly, synchronously, on
// whatever thread calls it, and its memory stays with that process: about 130 MB (its
// WebAssembly heap, compiled code, module and JS runtime) that never shrinks. In a process of
// its own it neither stalls the walk's event loop nor counts in the walk's memory, as a
// PostgreSQL server's would not; lib/db/pglite.ts speaks to it in IPC messages.
//
//   node lib/db/pglite-process.ts DATA_DIR     (started by lib/db/pglite.ts with an IPC channel)
//
// Requests run strictly one after another in arrival order: PGlite is one session, and the
// caller's side keeps a transaction's statements together.
//
// This process, not the ingest process, holds the data directory's lock, because it is the one
// that has the directory open: it exits when its ingest process goes (the IPC channel closes),
// but only after the statement it is running, and until then nobody else may open the directory.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createPglite, type PgliteInstance } from './pglite-wasm.ts';
import { DATABASE_PROCESS_V8_FLAGS } from '../v8-flags.ts';
import { alive, leaseHolder, tryAcquireLease, type LeaseHold } from '../lease.ts';
import {
  DatabaseBusyError,
  EmbeddedDatabaseGoneError,
  type PgliteReady,
  type PgliteReply,
  type PgliteRequest,
  type SerializedError,
} from './pglite-protocol.ts';

const ERROR_FIELDS = [
  'code',
  'detail',
  'hint',
  'severity',
  'position',
  'schema',
  'table',
  'column',
  'constraint',
  'where',
] as const;

// PostgreSQL's default 128 MB of shared buffers would live in the WebAssembly heap, which never
// shrinks; the data files are in the OS page cache anyway, so a small pool costs no reads.
const POSTGRES_SETTINGS = ['shared_buffers=16MB'];

// PostgreSQL's checkpointer is a server process, and PGlite runs PostgreSQL as one backend in
// single-user mode, which has none: without a CHECKPOINT its WAL grows for as long as it runs
// (9 GB by a third of a 100,000-document walk). This process is its checkpointer: every so many
// requests it looks at the WAL written since the last checkpoint and checkpoints past half of
// max_wal_size, about where a server with the same setting would (1 GB by default, so pg_wal
// stays near that size; a checkpoint takes some 60 ms with 16 MB of shared buffers).
const CHECKPOINT_CHECK_EVERY = 64;

// How long an opener waits for the directory's lock to be let go of by a process on its way out.
const ORPHAN_EXIT_WAIT_MS = 15_000;

// PGlite runs each statement synchronously in this process, so a long one stops any heartbeat;
// the directory's lock is freed only by its holder's death (two openers corrupt the directory).
const DATA_DIR_LOCK_STALE_MS = Number.POSITIVE_INFINITY;

function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const key of ERROR_FIELDS) {
    const value = (error as unknown as Record<string, unknown>)[key];
    if (value !== undefined) fields[key] = value;
  }
  return { name: error.name, message: error.message, fields };
}

/**
 * Answers the ingest process. One that has gone (killed, or a worker thread terminated) can no
 * longer be answered: the failed send ends this process as its disconnect does, rather than as
 * an unhandled EPIPE.
 */
function send(message: PgliteReply | PgliteReady): void {
  if (!process.connected) return;
  process.send!(message, undefined, undefined, (error) => {
    if (error) process.exit(0);
  });
}

async function lockDataDir(dataDir: string): Promise<LeaseHold> {
  const file = path.join(dataDir, 'ingest.lock');
  const giveUpAt = Date.now() + ORPHAN_EXIT_WAIT_MS;
  for (;;) {
    const hold = await tryAcquireLease(file, { servesPid: process.ppid, staleMs: DATA_DIR_LOCK_STALE_MS });
    if (hold !== null) return hold;
    const holder = await leaseHolder(file, DATA_DIR_LOCK_STALE_MS);
    // Waited for: a holder that has just let go, and a database process whose ingest process
    // has died (it exits after its statement).
    const leaving =
      holder === null || (holder.servesPid !== undefined && holder.hostname === hostname() && !alive(holder.servesPid));
    if (!leaving || Date.now() > giveUpAt) {
      throw new DatabaseBusyError(
        dataDir,
        holder === null ? 'a process that just exited' : `pid ${holder.servesPid ?? holder.pid} on ${holder.hostname}`,
      );
    }
    await sleep(50);
  }
}

/**
 * Runs initdb for a new data directory in a short-lived process (lib/db/pglite-init.ts says why),
 * when the ready-made database does not fit the installed PGlite (lib/db/pglite-template.ts),
 * with the database process's V8 flags: without baseline-only code, initdb's WebAssembly compiled
 * a second time peaked at 1.16 GB (a container of 1 GB died on its first walk), with it at 632 MB.
 */
async function createDataDir(dataDir: string): Promise<void> {
  const script = new URL('./pglite-init.ts', import.meta.url).pathname;
  await promisify(execFile)(process.execPath, [...DATABASE_PROCESS_V8_FLAGS, script, dataDir]).catch(
    (error: { stderr?: string; message: string }) => {
      throw new EmbeddedDatabaseGoneError(dataDir, `creating it failed: ${error.stderr?.trim() || error.message}`);
    },
  );
}

async function open(dataDir: string): Promise<{ pg: PgliteInstance; lock: LeaseHold | null }> {
  if (dataDir === 'memory://') return { pg: await createPglite(dataDir, POSTGRES_SETTINGS), lock: null };
  await mkdir(dataDir, { recursive: true });
  const lock = await lockDataDir(dataDir);
  try {
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
      // Imported only here: every open would otherwise load the archive reader for nothing.
      const { placeTemplate } = await import('./pglite-template.ts');
      if (!(await placeTemplate(dataDir))) await createDataDir(dataDir);
    }
    return { pg: await createPglite(dataDir, POSTGRES_SETTINGS), lock };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

let requestsSinceCheck = 0;

async function checkpointIfDue(db: PgliteInstance): Promise<void> {
  if (++requestsSinceCheck < CHECKPOINT_CHECK_EVERY) return;
  requestsSinceCheck = 0;
  const { rows } = await db.query<{ due: boolean }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn) > pg_size_bytes(current_setting('max_wal_size')) / 2 AS due FROM pg_control_checkpoint()`,
  );
  if (rows[0]!.due) await db.exec('CHECKPOINT');
}

async function run(db: PgliteInstance, request: PgliteRequest): Promise<{ rows: unknown[]; rowCount: number }> {
  switch (request.op) {
    case 'query': {
      const options =
        request.blob === undefined ? undefined : { blob: new Blob([request.blob as string | Uint8Array<ArrayBuffer>]) };
      const result = await db.query(request.sql, request.params as unknown[], options);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    }
    case 'exec':
      await db.exec(request.sql);
      return { rows: [], rowCount: 0 };
    case 'close':
      await db.close();
      return { rows: [], rowCount: 0 };
  }
}

// The ingest process's own shutdown (Ctrl-C reaches the whole process group, a service manager
// signals it) closes this database when its work is done; until then these signals are its.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});

const dataDir = process.argv[2]!;
const opened = await open(dataDir).catch((error: unknown) => {
  send({ ready: false, error: serializeError(error) });
  process.disconnect();
  return null;
});

if (opened !== null) {
  const { pg, lock } = opened;
  // An ingest process that died (SIGKILL, crash) leaves nobody to send 'close': exit as it
  // would have, after the statement in hand. PostgreSQL's WAL makes that a crash it recovers
  // from, and no transaction of a dead walk is left half-applied.
  process.on('disconnect', () => process.exit(0));
  let queue: Promise<void> = Promise.resolve();
  process.on('message', (request: PgliteRequest) => {
    queue = queue.then(async () => {
      let reply: PgliteReply;
      try {
        reply = { id: request.id, ok: true, ...(await run(pg, request)) };
      } catch (error) {
        reply = { id: request.id, ok: false, error: serializeError(error) };
      }
      if (request.op === 'close') await lock?.release();
      send(reply);
      if (request.op === 'close') process.disconnect();
      // A checkpoint that fails is tried again at the next check; what made it fail (a full
      // disk) fails the statements too, and they say so.
      else await checkpointIfDue(pg).catch(() => {});
    });
  });
  send({ ready: true });
}
