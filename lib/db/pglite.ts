// Embedded engine: PGlite with the pgvector extension, used through its own API. Its socket
// adapter is not used: COPY FROM STDIN breaks the socket session and every socket connection
// shares one backend (DESIGN.md 8).

import { PGlite, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { mkdir } from 'node:fs/promises';
import { copyStatement, type Database, type Queryable, type QueryResult } from './database.ts';

type PGliteQueryable = Pick<PGlite | Transaction, 'query' | 'exec'>;

function wrap(target: PGliteQueryable): Queryable {
  return {
    async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
      const result = await target.query<R>(sql, params as unknown[]);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await target.exec(sql);
    },
    async copyIn(table: string, columns: readonly string[], data: string | Uint8Array): Promise<void> {
      // PGlite's COPY reads its input from the virtual file /dev/blob.
      await target.query(copyStatement(table, columns, `'/dev/blob'`, data), [], { blob: new Blob([data as string | Uint8Array<ArrayBuffer>]) });
    },
  };
}

/** Opens (creating if needed) an embedded database in `dataDir`, or in memory for 'memory://'. */
export async function openPglite(dataDir: string): Promise<Database> {
  if (dataDir !== 'memory://') await mkdir(dataDir, { recursive: true });
  const pg = await PGlite.create(dataDir, { extensions: { vector } });
  const base = wrap(pg);
  return {
    ...base,
    engine: 'pglite',
    location: dataDir,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    close: () => pg.close(),
  };
}
