// A scratch database for one benchmark run or one test, on the engine the run targets: a real
// PostgreSQL when ENGINE_DB_DSN is set (scripts/pg-with-vector.sh sets it), else PGlite. Each
// call gets a schema of its own, so runs never see each other's rows. Starting PGlite costs
// seconds, so one in-memory instance serves the whole process. It lives in bench/, not lib/,
// because the image ships lib/ and this is no part of the service; the tests reach it through
// test/helpers/db.ts.

import { randomBytes } from 'node:crypto';
import type { Database } from '../lib/db/database.ts';
import type { Row, TableRows, TableSpec } from '../lib/db/tables.ts';
import { migrate } from '../lib/db/migrate.ts';
import { openPglite } from '../lib/db/pglite.ts';
import { openPostgres } from '../lib/db/postgres.ts';

/** One table's rows as a sink write. */
export function tableRows(spec: TableSpec, rows: readonly Row[]): TableRows {
  return new Map([[spec, rows]]);
}

export const targetEngine = process.env.ENGINE_DB_DSN ? 'postgres' : 'pglite';

export interface TestDatabase {
  db: Database;
  /** A DSN for this database (PostgreSQL only), so a child process can reach the same rows. */
  dsn: string | null;
  dispose(): Promise<void>;
}

let sharedPglite: Promise<Database> | null = null;

async function openPgliteSchema(schema: string): Promise<TestDatabase> {
  sharedPglite ??= openPglite('memory://').then(async (db) => {
    await db.exec('CREATE EXTENSION IF NOT EXISTS vector SCHEMA public');
    return db;
  });
  const shared = await sharedPglite;
  await shared.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}, public`);
  const db: Database = {
    ...shared,
    close: async () => {},
  };
  return {
    db,
    dsn: null,
    dispose: () => shared.exec(`DROP SCHEMA ${schema} CASCADE; SET search_path TO public`),
  };
}

async function openPostgresSchema(base: string, schema: string): Promise<TestDatabase> {
  const admin = async (sql: string) => {
    const database = await openPostgres(base, { max: 1 });
    try {
      await database.exec(sql);
    } finally {
      await database.close();
    }
  };
  await admin(`CREATE SCHEMA ${schema}`);
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema},public`);
  const dsn = url.toString();
  const db = await openPostgres(dsn);
  return {
    db,
    dsn,
    async dispose() {
      await db.close();
      await admin(`DROP SCHEMA ${schema} CASCADE`);
    },
  };
}

export async function openTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  const base = process.env.ENGINE_DB_DSN;
  const result = base ? await openPostgresSchema(base, schema) : await openPgliteSchema(schema);
  if (options.migrated !== false) await migrate(result.db);
  return result;
}
