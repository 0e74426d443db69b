// Server engine: a pg Pool to a real PostgreSQL with pgvector (ENGINE_DB_DSN).

import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { describeDsn } from '../config.ts';
import { copyStatement, inTransaction, type Database, type Queryable, type QueryResult } from './database.ts';

type PgQueryable = pg.Pool | pg.PoolClient;

function wrap(
  target: PgQueryable,
  withClient: <T>(fn: (client: pg.PoolClient) => Promise<T>) => Promise<T>,
): Queryable {
  return {
    async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
      const result = await target.query(sql, params as unknown[]);
      return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await target.query(sql);
    },
    copyIn: (table, columns, data) =>
      withClient(async (client) => {
        const chunk = typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
        await pipeline(Readable.from([chunk]), client.query(copyFrom(copyStatement(table, columns, 'STDIN', data))));
      }),
  };
}

export class DatabaseUnavailableError extends Error {
  constructor(location: string, cause: unknown) {
    super(`cannot connect to PostgreSQL at ${location}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = 'DatabaseUnavailableError';
  }
}

export interface PostgresOptions {
  /** Pool size; a walk needs few connections because the sink batches its writes. */
  max?: number;
}

export async function openPostgres(dsn: string, options: PostgresOptions = {}): Promise<Database> {
  const pool = new pg.Pool({ connectionString: dsn, max: options.max ?? 4 });
  // An idle client that loses its server emits 'error' on the pool; without a listener that
  // would crash the process. The next query reports the problem to its caller instead.
  pool.on('error', () => {});
  const withPoolClient = async <T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      return await fn(client);
    } finally {
      client.release();
    }
  };
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => {});
    throw new DatabaseUnavailableError(describeDsn(dsn), error);
  }
  return {
    ...wrap(pool, withPoolClient),
    kind: 'postgres',
    location: describeDsn(dsn),
    transaction: (fn) =>
      withPoolClient((client) =>
        inTransaction(
          wrap(client, (inner) => inner(client)),
          fn,
        ),
      ),
    close: () => pool.end(),
  };
}
