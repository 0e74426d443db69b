// Embedded engine: PGlite with the pgvector extension, used through its own API. Its socket
// adapter is not used: COPY FROM STDIN breaks the socket session and every socket connection
// shares one backend (DESIGN.md 8).
//
// One process at a time: PGlite is a single-user PostgreSQL, and two processes opening one
// data directory corrupt it. A lease file in the directory is held for as long as the database
// is open (a sidecar holds it for its whole life), so a second opener fails with a named error.

import { PGlite, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { leaseHolder, tryAcquireLease, type LeaseHold } from '../engine/lease.ts';
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

export class DatabaseBusyError extends Error {
  constructor(dataDir: string, holder: string) {
    super(`the embedded database at ${dataDir} is open in another process (${holder}); stop that process (an ingest serve, walk or watch) or give each its own INGEST_DATA_DIR`);
    this.name = 'DatabaseBusyError';
  }
}

async function lockDataDir(dataDir: string): Promise<LeaseHold> {
  const file = path.join(dataDir, 'ingest.lock');
  const hold = await tryAcquireLease(file);
  if (hold !== null) return hold;
  const holder = await leaseHolder(file);
  throw new DatabaseBusyError(dataDir, holder === null ? 'a process that just exited' : `pid ${holder.pid} on ${holder.hostname}`);
}

/** Opens (creating if needed) an embedded database in `dataDir`, or in memory for 'memory://'. */
export async function openPglite(dataDir: string): Promise<Database> {
  const inMemory = dataDir === 'memory://';
  if (!inMemory) await mkdir(dataDir, { recursive: true });
  const lock = inMemory ? null : await lockDataDir(dataDir);
  const pg = await PGlite.create(dataDir, { extensions: { vector } }).catch(async (error: unknown) => {
    await lock?.release();
    throw error;
  });
  const base = wrap(pg);
  return {
    ...base,
    engine: 'pglite',
    location: dataDir,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    async close() {
      try {
        await pg.close();
      } finally {
        await lock?.release();
      }
    },
  };
}
