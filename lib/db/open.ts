// Picks the engine from the configuration: ENGINE_DB_DSN selects a real PostgreSQL, its
// absence the embedded PGlite in the data directory. The embedded database is bootstrapped
// with the reference schema on open, because in embedded mode this service is also the
// platform; a real PostgreSQL is migrated only by `ingest db migrate` (the platform's role).
// Either way the catalog is then checked for the tables and columns the command uses
// (schema-check.ts), so a database that lacks them fails here, by name, not at a first query.
// A command that may not create the data directory's stores finds an existing one or fails
// (lib/data-dir.ts).

import type { Config } from '../config.ts';
import { requireStore } from '../data-dir.ts';
import type { Database } from './database.ts';
import { migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';
import { requireSchema } from './schema-check.ts';

export interface OpenOptions {
  /** Bootstrap the embedded database with the reference schema (default true). */
  bootstrap?: boolean;
  /** The tables of schema/ the command uses, checked with their columns (default: every one; [] checks none). */
  uses?: readonly string[];
  /**
   * Wait for statements without INGEST_DB_QUERY_TIMEOUT_S: migrations, whose index builds and
   * whose lock (another migrator's) may rightly take longer.
   */
  unboundedStatements?: boolean;
}

/** Connections besides the sink's flushes: the walk's reads, its passes, the routes. */
const READ_CONNECTIONS = 4;

export async function openDatabase(
  config: Pick<Config, 'database'> & Partial<Pick<Config, 'mayCreateDataDir' | 'sink'>>,
  options: OpenOptions = {},
): Promise<Database> {
  if (config.database.dsn === null) requireStore(config, config.database.embeddedDir, 'embedded database');
  // The embedded bootstrap's migrations wait without the statement limit, as `db migrate` does.
  let migrated = false;
  const db =
    config.database.dsn !== null
      ? await openPostgres(config.database.dsn, {
          max: READ_CONNECTIONS + (config.sink?.flushes ?? 0),
          connectTimeoutMs: config.database.connectTimeoutMs,
          queryTimeoutMs: options.unboundedStatements ? 0 : config.database.queryTimeoutMs,
        })
      : await openPglite(config.database.embeddedDir, {
          queryTimeoutMs: () => (migrated && !options.unboundedStatements ? config.database.queryTimeoutMs : 0),
        });
  try {
    if (db.kind === 'pglite' && options.bootstrap !== false) await migrate(db);
    migrated = true;
    if (options.uses?.length !== 0) await requireSchema(db, options.uses);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
