// The data layer's one small interface. Two engines implement it (embedded PGlite, a real
// PostgreSQL through a pg Pool) and every caller runs the same SQL on both.

export type DatabaseKind = 'pglite' | 'postgres';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements with no parameters (migrations). */
  exec(sql: string): Promise<void>;
  /** COPY rows into `table (columns)`: a string in PostgreSQL's text format, bytes in its binary format (PGCOPY). */
  copyIn(table: string, columns: readonly string[], data: string | Uint8Array): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: DatabaseKind;
  /** Where the data lives, safe to print: the data directory, or the DSN without its password. */
  readonly location: string;
  /** Runs fn inside BEGIN/COMMIT on one connection; ROLLBACK when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * BEGIN, fn, COMMIT on one session, ROLLBACK when fn throws: the one transaction both engines
 * run. A failed ROLLBACK is dropped so that the caller sees fn's error, the one that matters.
 */
export async function inTransaction<T>(session: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  await session.exec('BEGIN');
  try {
    const result = await fn(session);
    await session.exec('COMMIT');
    return result;
  } catch (error) {
    await session.exec('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The COPY statement for `copyIn`'s data: text format for a string, binary for bytes. */
export function copyStatement(
  table: string,
  columns: readonly string[],
  source: string,
  data: string | Uint8Array,
): string {
  const format = typeof data === 'string' ? '' : ' WITH (FORMAT binary)';
  return `COPY ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) FROM ${source}${format}`;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * True when the error, or one it was caused by, says the database cannot be reached: the
 * server's engine names it DatabaseUnavailableError (lib/db/postgres.ts), the embedded one
 * EmbeddedDatabaseGoneError. Every item would fail the same way, so a walk stops instead of
 * failing them one by one. Only the database layer's own errors count: a feed or a model API
 * refusing a connection is that item's failure.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e.name === 'DatabaseUnavailableError' || e.name === 'EmbeddedDatabaseGoneError') return true;
  }
  return false;
}
