// Before a command uses a database, the catalog must hold the tables and columns schema/ gives
// the ones it uses. The catalog, not schema_migrations: the platform may apply schema/ with a
// migration tool of its own that keeps no rows there. A database that lacks some fails here
// with a named error listing what is missing, each with the migration file that adds it, and
// the command that applies them; this service runs no DDL when it opens a database.

import type { Database, Queryable } from './database.ts';
import { loadMigrations } from './migrate.ts';
import { schemaShape, type SchemaShape } from './schema-shape.ts';
import { IngestError } from '../errors.ts';

export interface MissingSchema {
  /** Migration file -> what it adds that the database lacks ("table t", "column t.c"). */
  readonly byFile: ReadonlyMap<string, readonly string[]>;
}

export class SchemaMissingError extends IngestError {
  readonly missing: MissingSchema;
  constructor(db: Pick<Database, 'kind' | 'location'>, missing: MissingSchema) {
    const lines = [...missing.byFile].map(([file, items]) => `  ${file}: ${items.join(', ')}`);
    const apply =
      db.kind === 'postgres'
        ? '`ingest db migrate` with ENGINE_DB_DSN naming this database (on the platform’s database that is the ' +
          'platform’s step: it may apply the same schema/ files with its own migration tool)'
        : '`ingest db migrate` with the same INGEST_DATA_DIR';
    super(
      'schema_missing',
      `the ${db.kind === 'postgres' ? 'PostgreSQL' : 'embedded'} database at ${db.location} lacks tables or ` +
        `columns this command uses (read from its catalog):\n${lines.join('\n')}\n` +
        `Apply schema/ with ${apply}; opening a database never changes its schema.`,
    );
    this.missing = missing;
  }
}

let shape: Promise<SchemaShape> | null = null;

/** The shape of schema/ as this build has it, read once per process. */
export function expectedSchema(): Promise<SchemaShape> {
  shape ??= loadMigrations().then(schemaShape);
  return shape;
}

/**
 * What of `tables` (every table of schema/ when omitted) and their columns the database lacks,
 * or null when it has them all. Names resolve through the session's search_path, as the
 * commands' own statements do.
 */
export async function missingSchema(db: Queryable, tables?: readonly string[]): Promise<MissingSchema | null> {
  const expected = await expectedSchema();
  const wanted = tables ?? [...expected.tables.keys()];
  const unknown = wanted.filter((t) => !expected.tables.has(t));
  if (unknown.length > 0) throw new Error(`not tables of schema/: ${unknown.join(', ')}`);
  const { rows } = await db.query<{ table_name: string; column_name: string | null }>(
    `SELECT t AS table_name, a.attname::text AS column_name
       FROM unnest($1::text[]) AS t
       LEFT JOIN pg_attribute a ON a.attrelid = to_regclass(t) AND a.attnum > 0 AND NOT a.attisdropped`,
    [wanted],
  );
  const present = new Map<string, Set<string>>();
  for (const { table_name: table, column_name: column } of rows) {
    const columns = present.get(table) ?? new Set<string>();
    if (column !== null) columns.add(column);
    present.set(table, columns);
  }
  const byFile = new Map<string, string[]>();
  const note = (file: string, item: string) => byFile.set(file, [...(byFile.get(file) ?? []), item]);
  for (const table of wanted) {
    const columns = present.get(table)!;
    if (columns.size === 0) {
      note(expected.createdBy.get(table)!, `table ${table}`);
      continue;
    }
    for (const [column, file] of expected.tables.get(table)!) {
      if (!columns.has(column)) note(file, `column ${table}.${column}`);
    }
  }
  if (byFile.size === 0) return null;
  return { byFile: new Map([...byFile].sort(([a], [b]) => a.localeCompare(b))) };
}

/** Throws SchemaMissingError when the database lacks any of `tables` or their columns. */
export async function requireSchema(db: Database, tables?: readonly string[]): Promise<void> {
  const missing = await missingSchema(db, tables);
  if (missing !== null) throw new SchemaMissingError(db, missing);
}

/** Where the job queue's schema comes from: the migration that installs pg-boss's `pgboss`. */
export const JOB_QUEUE_MIGRATION = 'schema/0017_job_queue.sql';

export class JobQueueMissingError extends IngestError {
  constructor(db: Pick<Database, 'location'>, lacks: string) {
    super(
      'job_queue_missing',
      `the PostgreSQL database at ${db.location} lacks ${lacks}, which the distributed walk's job queue uses ` +
        `(${JOB_QUEUE_MIGRATION}). Apply schema/ with \`ingest db migrate\` with ENGINE_DB_DSN naming this ` +
        'database; opening a database never changes its schema.',
    );
  }
}

/**
 * The pg-boss schema version installed in the database (pgboss.version), checked present with
 * the queues a command works; throws JobQueueMissingError otherwise. Only the commands of the
 * distributed walk call this: a plain walk never needs the queue.
 */
export async function requireJobQueue(
  db: Queryable & Pick<Database, 'location'>,
  queues: readonly string[],
): Promise<number> {
  const { rows } = await db.query<{ installed: boolean }>(
    `SELECT to_regclass('pgboss.version') IS NOT NULL AS installed`,
  );
  if (rows[0]?.installed !== true) throw new JobQueueMissingError(db, 'the schema pgboss');
  const version = await db.query<{ version: number }>('SELECT max(version)::int AS version FROM pgboss.version');
  const present = await db.query<{ name: string }>('SELECT name FROM pgboss.queue WHERE name = ANY($1::text[])', [
    queues,
  ]);
  const absent = queues.filter((q) => !present.rows.some((r) => r.name === q));
  if (absent.length > 0)
    throw new JobQueueMissingError(db, `the queue${absent.length > 1 ? 's' : ''} ${absent.join(', ')}`);
  return version.rows[0]?.version ?? 0;
}
