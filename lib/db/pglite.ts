// Embedded engine: PGlite with the pgvector extension, used through its own API. Its socket
// adapter is not used: COPY FROM STDIN breaks the socket session and every socket connection
// shares one backend (DESIGN.md 8).
//
// PGlite runs in a thread of its own (lib/db/pglite-thread.ts) so that its synchronous
// WebAssembly never runs on the walk's event loop. PGlite is one session, so statements are
// sent one operation at a time: a transaction holds the session from BEGIN to COMMIT, and any
// other statement waits for it.
//
// One process at a time: PGlite is a single-user PostgreSQL, and two processes opening one
// data directory corrupt it. A lease file in the directory is held for as long as the database
// is open (a sidecar holds it for its whole life), so a second opener fails with a named error.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { leaseHolder, tryAcquireLease, type LeaseHold } from '../engine/lease.ts';
import { copyStatement, type Database, type Queryable, type QueryResult } from './database.ts';
import type { PgliteReply, PgliteRequest, PgliteThreadData, SerializedError } from './pglite-thread.ts';

export class DatabaseBusyError extends Error {
  constructor(dataDir: string, holder: string) {
    super(`the embedded database at ${dataDir} is open in another process (${holder}); stop that process (an ingest serve, walk or watch) or give each its own INGEST_DATA_DIR`);
    this.name = 'DatabaseBusyError';
  }
}

/** The embedded database's thread ended while statements were outstanding, or before it opened. */
export class EmbeddedDatabaseGoneError extends Error {
  constructor(dataDir: string, detail: string) {
    super(`the embedded database at ${dataDir} is no longer running: ${detail}`);
    this.name = 'EmbeddedDatabaseGoneError';
  }
}

function deserializeError({ name, message, fields }: SerializedError): Error {
  const error = Object.assign(new Error(message), fields);
  error.name = name;
  return error;
}

type Outcome = { rows: unknown[]; rowCount: number };
type Request = PgliteRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

/** The message channel to the database thread: one reply per request, in order. */
class PgliteChannel {
  readonly #worker: Worker;
  readonly #dataDir: string;
  readonly #pending = new Map<number, { resolve: (outcome: Outcome) => void; reject: (error: Error) => void }>();
  #nextId = 1;
  #gone: Error | null = null;

  constructor(worker: Worker, dataDir: string) {
    this.#worker = worker;
    this.#dataDir = dataDir;
    worker.on('message', (reply: PgliteReply) => {
      const waiter = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      if (reply.ok) waiter?.resolve(reply);
      else waiter?.reject(deserializeError(reply.error));
    });
    const end = (detail: string) => {
      this.#gone ??= new EmbeddedDatabaseGoneError(this.#dataDir, detail);
      for (const waiter of this.#pending.values()) waiter.reject(this.#gone);
      this.#pending.clear();
    };
    worker.on('error', (error) => end(error.message));
    worker.on('exit', (code) => end(`its thread exited (code ${code})`));
    // An idle database, like an idle in-process one, does not keep the process alive.
    worker.unref();
  }

  send(request: Request): Promise<Outcome> {
    if (this.#gone !== null) return Promise.reject(this.#gone);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage({ ...request, id });
    });
  }

  exited(): Promise<void> {
    if (this.#worker.threadId === -1) return Promise.resolve();
    this.#worker.ref();
    return new Promise((resolve) => this.#worker.once('exit', () => resolve()));
  }
}

function queryable(send: (request: Request) => Promise<Outcome>): Queryable {
  return {
    async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
      const { rows, rowCount } = await send({ op: 'query', sql, params });
      return { rows: rows as R[], rowCount };
    },
    async exec(sql: string): Promise<void> {
      await send({ op: 'exec', sql });
    },
    async copyIn(table: string, columns: readonly string[], data: string | Uint8Array): Promise<void> {
      // PGlite's COPY reads its input from the virtual file /dev/blob.
      await send({ op: 'query', sql: copyStatement(table, columns, `'/dev/blob'`, data), params: [], blob: data });
    },
  };
}

async function lockDataDir(dataDir: string): Promise<LeaseHold> {
  const file = path.join(dataDir, 'ingest.lock');
  const hold = await tryAcquireLease(file);
  if (hold !== null) return hold;
  const holder = await leaseHolder(file);
  throw new DatabaseBusyError(dataDir, holder === null ? 'a process that just exited' : `pid ${holder.pid} on ${holder.hostname}`);
}

/** Runs initdb for a new data directory in a short-lived process (lib/db/pglite-init.ts says why). */
async function createDataDir(dataDir: string): Promise<void> {
  const script = new URL('./pglite-init.ts', import.meta.url).pathname;
  await promisify(execFile)(process.execPath, [script, dataDir]).catch((error: { stderr?: string; message: string }) => {
    throw new EmbeddedDatabaseGoneError(dataDir, `creating it failed: ${error.stderr?.trim() || error.message}`);
  });
}

function startThread(dataDir: string): Promise<PgliteChannel> {
  const worker = new Worker(new URL('./pglite-thread.ts', import.meta.url), { workerData: { dataDir } satisfies PgliteThreadData });
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(new EmbeddedDatabaseGoneError(dataDir, error.message));
    worker.once('error', failed);
    worker.once('message', (message: { ready: boolean; error?: SerializedError }) => {
      worker.off('error', failed);
      if (message.ready) resolve(new PgliteChannel(worker, dataDir));
      else reject(deserializeError(message.error!));
    });
  });
}

/** Opens (creating if needed) an embedded database in `dataDir`, or in memory for 'memory://'. */
export async function openPglite(dataDir: string): Promise<Database> {
  const inMemory = dataDir === 'memory://';
  if (!inMemory) await mkdir(dataDir, { recursive: true });
  const lock = inMemory ? null : await lockDataDir(dataDir);
  const channel = await (inMemory || existsSync(path.join(dataDir, 'PG_VERSION')) ? Promise.resolve() : createDataDir(dataDir))
    .then(() => startThread(dataDir))
    .catch(async (error: unknown) => {
      await lock?.release();
      throw error;
    });

  // The session: every top-level statement and every transaction takes it in turn.
  let session: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const turn = session.then(work, work);
    session = turn.catch(() => {});
    return turn;
  };
  const direct = (request: Request) => channel.send(request);
  const inner = queryable(direct);
  return {
    ...queryable((request) => inTurn(() => direct(request))),
    engine: 'pglite',
    location: dataDir,
    transaction: (fn) =>
      inTurn(async () => {
        await inner.exec('BEGIN');
        try {
          const result = await fn(inner);
          await inner.exec('COMMIT');
          return result;
        } catch (error) {
          await inner.exec('ROLLBACK').catch(() => {});
          throw error;
        }
      }),
    async close() {
      try {
        await inTurn(() => direct({ op: 'close' }).then(() => channel.exited())).catch((error: unknown) => {
          // A thread that already ended has nothing left to close.
          if (!(error instanceof EmbeddedDatabaseGoneError)) throw error;
        });
      } finally {
        await lock?.release();
      }
    },
  };
}
