// Picks the engine from the configuration: ENGINE_DB_DSN selects a real PostgreSQL, its
// absence the embedded PGlite in the data directory. The embedded database is bootstrapped
// with the reference schema on open, because in embedded mode this service is also the
// platform; a real PostgreSQL is migrated only by `ingest db migrate` (the platform's role).
// A command that may not create the data directory's stores finds an existing one or fails
// (lib/data-dir.ts).

import type { Config } from '../config.ts';
import { requireStore } from '../data-dir.ts';
import type { Database } from './database.ts';
import { migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export interface OpenOptions {
  /** Bootstrap the embedded database with the reference schema (default true). */
  bootstrap?: boolean;
}

export async function openDatabase(
  config: Pick<Config, 'database'> & Partial<Pick<Config, 'mayCreateDataDir'>>,
  options: OpenOptions = {},
): Promise<Database> {
  if (config.database.dsn !== null) return openPostgres(config.database.dsn);
  requireStore(config, config.database.embeddedDir, 'embedded database');
  const db = await openPglite(config.database.embeddedDir);
  if (options.bootstrap === false) return db;
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
