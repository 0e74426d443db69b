// Applies the reference platform schema (schema/ files NNNN_name.sql) in version order, each file
// in its own transaction, and records what it applied in schema_migrations. Applying twice is a
// no-op. This module and schema/ are the only places allowed to issue DDL; the walk writes rows.
// A migration's checksum is taken over its SQL without comments (lib/db/sql-without-comments.ts),
// so a comment may be edited after release; an edit of the SQL is refused.

import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sha256Hex } from '../hash.ts';
import { isReleasedFileChecksum } from './released-checksums.ts';
import { sqlWithoutComments } from './sql-without-comments.ts';
import type { Database } from './database.ts';
import { IngestError } from '../errors.ts';

export const SCHEMA_DIR = fileURLToPath(new URL('../../schema/', import.meta.url));
const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
// One constant key so two processes migrating the same database take turns.
const MIGRATION_LOCK_KEY = 7_340_917;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** sha256 of the SQL without comments: what schema_migrations records. */
  checksum: string;
}

export interface MigrationReport {
  applied: Migration[];
  alreadyApplied: number;
}

export class MigrationError extends IngestError {
  constructor(message: string, options?: ErrorOptions) {
    super('migration_failed', message, options);
  }
}

export async function loadMigrations(dir: string = SCHEMA_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = MIGRATION_FILE.exec(file);
    if (match === null) throw new MigrationError(`schema file ${file} is not named NNNN_name.sql`);
    const sql = await readFile(`${dir}/${file}`, 'utf8');
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version))
      throw new MigrationError(`two schema files share version ${version}`);
    migrations.push({ version, name: match[2]!, sql, checksum: sha256Hex(sqlWithoutComments(sql)) });
  }
  return migrations;
}

/** The file's recorded checksum is its own, or one its released text had (released-checksums.ts). */
function recordedAsItIs(migration: Migration, checksum: string | undefined): boolean {
  return checksum !== undefined && (checksum === migration.checksum || isReleasedFileChecksum(migration, checksum));
}

export async function migrate(db: Database, migrations?: Migration[]): Promise<MigrationReport> {
  const all = migrations ?? (await loadMigrations());
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  // Every open of the embedded database comes here: when all are recorded as they are, one
  // read says so, not a transaction per migration (64 ms of a no-op walk's start-up).
  const { rows: recorded } = await db.query<{ version: number; checksum: string }>(
    'SELECT version, checksum FROM schema_migrations',
  );
  const checksums = new Map(recorded.map((row) => [row.version, row.checksum]));
  if (all.every((migration) => recordedAsItIs(migration, checksums.get(migration.version))))
    return { applied: [], alreadyApplied: all.length };
  const applied: Migration[] = [];
  let alreadyApplied = 0;
  for (const migration of all) {
    const wasApplied = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const { rows } = await tx.query<{ checksum: string }>(
        'SELECT checksum FROM schema_migrations WHERE version = $1',
        [migration.version],
      );
      const recorded = rows[0];
      if (recorded !== undefined) {
        // A checksum a release recorded over the whole file is accepted and left as it is, so that
        // release, rolled back to, still accepts it (docs/DECISIONS.md "The repository explains itself").
        if (!recordedAsItIs(migration, recorded.checksum)) {
          throw new MigrationError(
            `schema file ${String(migration.version).padStart(4, '0')}_${migration.name}.sql changed after it was applied; ` +
              'add a new migration instead of editing an applied one',
          );
        }
        return true;
      }
      try {
        await tx.exec(migration.sql);
      } catch (error) {
        throw new MigrationError(
          `migration ${migration.version} (${migration.name}) failed: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        migration.checksum,
      ]);
      return false;
    });
    if (wasApplied) alreadyApplied += 1;
    else applied.push(migration);
  }
  return { applied, alreadyApplied };
}
