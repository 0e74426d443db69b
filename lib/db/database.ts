// The data layer's one small interface. Two engines implement it (embedded PGlite, a real
// PostgreSQL through a pg Pool) and every caller runs the same SQL on both.

export type Engine = 'pglite' | 'postgres';

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
  readonly engine: Engine;
  /** Where the data lives, safe to print: the data directory, or the DSN without its password. */
  readonly location: string;
  /** Runs fn inside BEGIN/COMMIT on one connection; ROLLBACK when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The COPY statement for `copyIn`'s data: text format for a string, binary for bytes. */
export function copyStatement(table: string, columns: readonly string[], source: string, data: string | Uint8Array): string {
  const format = typeof data === 'string' ? '' : ' WITH (FORMAT binary)';
  return `COPY ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) FROM ${source}${format}`;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
