// Embedded engine: PGlite with the pgvector extension, used through its own API. Its socket
// adapter is not used: COPY FROM STDIN breaks the socket session and every socket connection
// shares one backend (docs/ARCHITECTURE.md#the-data-layer).
//
// PGlite runs in a process of its own (lib/db/pglite-process.ts, which says why), and this is
// its client. PGlite is one session, so statements are sent one operation at a time: a
// transaction holds the session from BEGIN to COMMIT, and any other statement waits for it.
//
// One process at a time: PGlite is a single-user PostgreSQL, and two processes opening one
// data directory corrupt it. The database process holds a lease file in the directory for as
// long as it has it open, so a second opener fails with a named error. A directory holding
// files of another user fails before the process starts (pglite-owner.ts).

import { fork, type ChildProcess } from 'node:child_process';
import { DATABASE_PROCESS_V8_FLAGS } from '../v8-flags.ts';
import { checkDataDirOwnership } from './pglite-owner.ts';
import { copyStatement, inTransaction, type Database, type Queryable, type QueryResult } from './database.ts';
import {
  DatabaseBusyError,
  EmbeddedDatabaseGoneError,
  type PgliteReady,
  type PgliteReply,
  type PgliteRequest,
  type SerializedError,
} from './pglite-protocol.ts';

// Errors of our own keep their class across the process boundary, so callers can test for them.
const OWN_ERRORS: Record<string, { prototype: Error }> = { DatabaseBusyError, EmbeddedDatabaseGoneError };

function deserializeError({ name, message, fields }: SerializedError): Error {
  const error = Object.assign(new Error(message), fields);
  error.name = name;
  const own = OWN_ERRORS[name];
  if (own !== undefined) Object.setPrototypeOf(error, own.prototype);
  return error;
}

type Outcome = { rows: unknown[]; rowCount: number };
type Request = PgliteRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

/** The IPC channel to the database process: one reply per request, in order. */
class PgliteChannel {
  readonly #child: ChildProcess;
  readonly #dataDir: string;
  readonly #pending = new Map<number, { resolve: (outcome: Outcome) => void; reject: (error: Error) => void }>();
  #nextId = 1;
  #gone: Error | null = null;

  constructor(child: ChildProcess, dataDir: string) {
    this.#child = child;
    this.#dataDir = dataDir;
    child.on('message', (reply: PgliteReply) => {
      const waiter = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) this.#hold(false);
      if (reply.ok) waiter?.resolve(reply);
      else waiter?.reject(deserializeError(reply.error));
    });
    const end = (detail: string) => {
      this.#gone ??= new EmbeddedDatabaseGoneError(this.#dataDir, detail);
      for (const waiter of this.#pending.values()) waiter.reject(this.#gone);
      this.#pending.clear();
    };
    child.on('error', (error) => end(error.message));
    child.on('exit', (code, signal) => end(`its process exited (${signal ?? `code ${code}`})`));
    // An idle database, like an idle in-process one, does not keep the process alive.
    this.#hold(false);
  }

  #hold(alive: boolean): void {
    if (alive) {
      this.#child.ref();
      this.#child.channel?.ref();
    } else {
      this.#child.unref();
      this.#child.channel?.unref();
    }
  }

  /**
   * One request and its reply. A reply that does not come within `timeoutMs` (0: no limit) means
   * a process that hangs: it is ended, and this request and every other fail as if it had gone.
   */
  send(request: Request, timeoutMs: number): Promise<Outcome> {
    if (this.#gone !== null) return Promise.reject(this.#gone);
    const id = this.#nextId++;
    const sent = new Promise<Outcome>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#hold(true);
      this.#child.send({ ...request, id } satisfies PgliteRequest);
    });
    if (timeoutMs === 0) return sent;
    const timer = setTimeout(() => {
      this.#gone ??= new EmbeddedDatabaseGoneError(
        this.#dataDir,
        `it gave no answer to a statement within ${timeoutMs / 1000} s (INGEST_DB_QUERY_TIMEOUT_S), so its process was ended`,
      );
      this.#child.kill('SIGKILL');
    }, timeoutMs);
    return sent.finally(() => clearTimeout(timer));
  }

  exited(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return Promise.resolve();
    this.#hold(true);
    return new Promise((resolve) => this.#child.once('exit', () => resolve()));
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

const DATABASE_PROCESS = new URL('./pglite-process.ts', import.meta.url).pathname;

// glibc's allocator, as the database process uses it: freed memory handed back past 128 KB
// instead of kept for reuse, and two arenas instead of one per thread. 2,000 documents: its
// resident memory 190 -> 168 MB, at the same walk speed.
const DATABASE_PROCESS_MALLOC = { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' };

function startProcess(dataDir: string): Promise<PgliteChannel> {
  const child = fork(DATABASE_PROCESS, [dataDir], {
    execArgv: [...DATABASE_PROCESS_V8_FLAGS],
    env: { ...process.env, ...DATABASE_PROCESS_MALLOC },
    serialization: 'advanced',
    // Its stdout goes to our stderr: ours carries the CLI's results.
    stdio: ['ignore', 2, 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const failed = (detail: string) => reject(new EmbeddedDatabaseGoneError(dataDir, detail));
    const onError = (error: Error) => failed(error.message);
    const onExit = (code: number | null, signal: string | null) =>
      failed(`its process exited before it opened (${signal ?? `code ${code}`})`);
    child.once('error', onError);
    child.once('exit', onExit);
    child.once('message', (message: PgliteReady) => {
      child.off('error', onError);
      child.off('exit', onExit);
      if (message.ready) resolve(new PgliteChannel(child, dataDir));
      else reject(deserializeError(message.error));
    });
  });
}

export interface PgliteOptions {
  /**
   * The longest wait for one statement's answer in ms, read at each statement (0: none), so
   * that the bootstrap's migrations can run unbounded before the limit applies.
   */
  queryTimeoutMs?: () => number;
}

/** Opens (creating if needed) an embedded database in `dataDir`, or in memory for 'memory://'. */
export async function openPglite(dataDir: string, options: PgliteOptions = {}): Promise<Database> {
  if (dataDir !== 'memory://') checkDataDirOwnership(dataDir);
  const channel = await startProcess(dataDir);

  // The session: every top-level statement and every transaction takes it in turn.
  let session: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const turn = session.then(work, work);
    session = turn.catch(() => {});
    return turn;
  };
  const direct = (request: Request) => channel.send(request, options.queryTimeoutMs?.() ?? 0);
  const inner = queryable(direct);
  return {
    ...queryable((request) => inTurn(() => direct(request))),
    kind: 'pglite',
    location: dataDir,
    transaction: (fn) => inTurn(() => inTransaction(inner, fn)),
    async close() {
      await inTurn(() => direct({ op: 'close' }).then(() => channel.exited())).catch((error: unknown) => {
        // A process that already ended has nothing left to close.
        if (!(error instanceof EmbeddedDatabaseGoneError)) throw error;
      });
    },
  };
}
