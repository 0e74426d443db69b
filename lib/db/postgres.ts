// Server engine: a pg Pool to a real PostgreSQL with pgvector (ENGINE_DB_DSN).

import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { describeDsn } from '../config.ts';
import { bindArraysInBinary } from './array-params.ts';
import { copyStatement, inTransaction, type Database, type Queryable, type QueryResult } from './database.ts';
import { IngestError } from '../errors.ts';

type PgQueryable = pg.Pool | pg.PoolClient;

// The errors that say the server, not the statement, is the problem: SQLSTATE class 08
// (connection exception) and 57P01-57P03 (shutdown, crash, cannot connect now), a connection
// refused or reset, one pg saw end, and the waits docs/OPERATIONS.md "When the database goes
// away" bounds: for a connection (pg-pool's message, or pg's for one that never answered) and
// for a statement's answer.
const LOST_SQLSTATE = /^(08...|57P0[1-3])$/;
const LOST_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);
const LOST_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout)/;

function lostServer(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && (LOST_SQLSTATE.test(code) || LOST_SOCKET_CODES.has(code))) return true;
  return error instanceof Error && LOST_MESSAGES.test(error.message);
}

/** Runs `work`, naming a lost server DatabaseUnavailableError (isDatabaseUnavailable tells it apart). */
async function reaching<T>(location: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw lostServer(error) ? new DatabaseUnavailableError(location, error) : error;
  }
}

function wrap(
  target: PgQueryable,
  location: string,
  withClient: <T>(fn: (client: pg.PoolClient) => Promise<T>) => Promise<T>,
): Queryable {
  return {
    query: <R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> =>
      reaching(location, async () => {
        const result = await target.query(sql, bindArraysInBinary(sql, params) as unknown[]);
        return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length };
      }),
    exec: (sql: string): Promise<void> => reaching(location, async () => void (await target.query(sql))),
    copyIn: (table, columns, data) =>
      withClient((client) =>
        reaching(location, async () => {
          const chunk = typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
          await pipeline(Readable.from([chunk]), client.query(copyFrom(copyStatement(table, columns, 'STDIN', data))));
        }),
      ),
  };
}

/** Which setting bounded the wait that ran out, for the message. */
function waitThatRanOut(message: string): string {
  if (/connection timeout|timeout exceeded when trying to connect/.test(message))
    return ' (no connection within INGEST_DB_CONNECT_TIMEOUT_S)';
  if (message.startsWith('Query read timeout')) return ' (no answer within INGEST_DB_QUERY_TIMEOUT_S)';
  return '';
}

export class DatabaseUnavailableError extends IngestError {
  constructor(location: string, cause: unknown) {
    const message = cause instanceof Error ? cause.message : String(cause);
    super('database_unavailable', `cannot connect to PostgreSQL at ${location}: ${message}${waitThatRanOut(message)}`, {
      cause,
    });
  }
}

export interface PostgresOptions {
  /** Pool size; a walk needs few connections because the sink batches its writes. */
  max?: number;
  /** The longest wait for a connection, new or pooled (INGEST_DB_CONNECT_TIMEOUT_S); default 30 s. */
  connectTimeoutMs?: number;
  /** The longest wait for one statement's answer (INGEST_DB_QUERY_TIMEOUT_S); 0 or absent: none. */
  queryTimeoutMs?: number;
}

/** pg's pool settings for the waits above; TCP keepalive so that a peer host gone is noticed. */
const poolSettings = (dsn: string, options: PostgresOptions): pg.PoolConfig => ({
  connectionString: dsn,
  connectionTimeoutMillis: options.connectTimeoutMs ?? 30_000,
  ...(options.queryTimeoutMs ? { query_timeout: options.queryTimeoutMs } : {}),
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
});

/** What rate-limiter-flexible's PostgreSQL store needs of its client (lib/llm/budget.ts). */
export interface QueryPool {
  query(query: {
    text: string;
    values?: unknown[];
    name?: string;
  }): Promise<{ rows: unknown[]; rowCount: number | null }>;
  end(): Promise<void>;
}

/**
 * A small pool of its own for a library that issues its own statements (the model budget's
 * store), outside the Database facade. Idle, it lets the process exit: a budget nobody closed
 * must not hold a command open.
 */
export function openQueryPool(dsn: string, max = 2, options: PostgresOptions = {}): QueryPool {
  const pool = new pg.Pool({ ...poolSettings(dsn, options), max, allowExitOnIdle: true });
  // As in openPostgres: a lost idle client must not crash the process; the next query reports.
  pool.on('error', () => {});
  return pool;
}

export async function openPostgres(dsn: string, options: PostgresOptions = {}): Promise<Database> {
  const pool = new pg.Pool({ ...poolSettings(dsn, options), max: options.max ?? 4 });
  // An idle client that loses its server emits 'error' on the pool; without a listener that
  // would crash the process. The next query reports the problem to its caller instead.
  pool.on('error', () => {});
  const location = describeDsn(dsn);
  const withPoolClient = async <T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await reaching(location, () => pool.connect());
    // A checked-out client whose server goes emits 'error', and unheard that ends the process;
    // its query in flight rejects on its own. A client so broken is discarded, not pooled.
    const ignore = () => {};
    client.on('error', ignore);
    let broken: Error | undefined;
    try {
      return await fn(client);
    } catch (error) {
      if (error instanceof DatabaseUnavailableError) broken = error;
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(broken);
    }
  };
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => {});
    throw new DatabaseUnavailableError(location, error);
  }
  return {
    ...wrap(pool, location, withPoolClient),
    kind: 'postgres',
    location,
    transaction: (fn) =>
      withPoolClient((client) =>
        inTransaction(
          wrap(client, location, (inner) => inner(client)),
          fn,
        ),
      ),
    close: () => pool.end(),
  };
}
