// @engine
// The catalog check of lib/db/schema-check.ts on the engine under test: the shape read from
// schema/ is what migrating leaves, and a database that lacks some of it is refused by name,
// with the migration file that adds each missing part, however it was (or was not) migrated.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../lib/config.ts';
import { DATABASE_PROCESS_V8_FLAGS } from '../lib/v8-flags.ts';
import { loadMigrations, migrate } from '../lib/db/migrate.ts';
import { openDatabase } from '../lib/db/open.ts';
import { expectedSchema, missingSchema, requireSchema, SchemaMissingError } from '../lib/db/schema-check.ts';
import { runIngest } from './helpers/cli.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase({ migrated: false });
});
test.after.each(async () => {
  await t.dispose();
});

const listed = (missing: Awaited<ReturnType<typeof missingSchema>>) =>
  missing === null ? null : Object.fromEntries(missing.byFile);

test('the shape read from schema/ is exactly the catalog a migrated database has', async () => {
  await migrate(t.db);
  const { rows } = await t.db.query<{ table_name: string; column_name: string }>(
    `SELECT c.relname::text AS table_name, a.attname::text AS column_name
       FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
      ORDER BY 1, 2`,
  );
  const catalog = rows.map((r) => `${r.table_name}.${r.column_name}`);
  const shape = await expectedSchema();
  const expected = [...shape.tables].flatMap(([table, columns]) => [...columns.keys()].map((c) => `${table}.${c}`));
  assert.equal(expected.sort(), catalog);
  assert.is(shape.tables.get('record_embeddings')!.get('content_sha256'), 'schema/0004_embedding_content_hash.sql');
  assert.is(shape.tables.get('entity_names')!.has('bands'), false, 'a dropped column is not expected');
  assert.is(await missingSchema(t.db), null);
});

test('a database never migrated is refused: every table by the file that creates it, and the command to apply them', async () => {
  const missing = await missingSchema(t.db);
  const files = listed(missing)!;
  assert.ok(files['schema/0001_reference_schema.sql']!.includes('table entity_mentions'));
  assert.ok(files['schema/0013_bundle_concepts.sql']!.includes('table bundle_concepts'));
  assert.not.ok(
    Object.values(files).some((items) => items.some((i) => i.startsWith('column '))),
    'a missing table is named once, not by its columns',
  );
  try {
    await requireSchema(t.db);
    assert.unreachable('expected a SchemaMissingError');
  } catch (error) {
    assert.instance(error, SchemaMissingError);
    const message = (error as Error).message;
    assert.match(message, /schema\/0001_reference_schema\.sql: table source_documents, table reference_items/);
    assert.match(message, /`ingest db migrate`/);
    assert.match(message, new RegExp(t.db.location.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  }
});

test('a database migrated without 0014 lacks exactly the columns 0014 adds, and only a command using that table cares', async () => {
  const all = await loadMigrations();
  await migrate(
    t.db,
    all.filter((m) => m.version !== 14),
  );
  assert.equal(listed(await missingSchema(t.db)), {
    'schema/0014_processing_queue_claims.sql': [
      'column processing_queue.claim_token',
      'column processing_queue.claimed_by',
      'column processing_queue.run_after',
    ],
  });
  assert.is(await missingSchema(t.db, ['feed_articles', 'entity_mentions']), null);
  assert.ok((await missingSchema(t.db, ['processing_queue'])) !== null);
});

test('schema/ applied by another migration tool (no schema_migrations rows) is accepted', async () => {
  for (const migration of await loadMigrations()) await t.db.exec(migration.sql);
  assert.is(await missingSchema(t.db), null);
  const { rows } = await t.db.query<{ found: string | null }>("SELECT to_regclass('schema_migrations')::text AS found");
  assert.is(rows[0]!.found, null);
});

if (targetEngine === 'postgres') {
  test('`ingest walk` against a fresh PostgreSQL exits 1 naming the missing tables, not a raw relation error', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ingest-schema-check-'));
    try {
      await mkdir(path.join(root, 'corpus'));
      const result = await runIngest(['walk', path.join(root, 'corpus')], {
        ENGINE_DB_DSN: t.dsn!,
        INGEST_DATA_DIR: root,
        INGEST_LOG_LEVEL: 'silent',
      });
      assert.is(result.status, 1, result.stderr);
      assert.match(result.stderr, /lacks tables or columns this command uses/);
      assert.match(result.stderr, /table entity_mentions/);
      assert.match(result.stderr, /`ingest db migrate` with ENGINE_DB_DSN naming this database/);
      assert.not.match(result.stderr, /does not exist/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
} else {
  test('an embedded database opened without its bootstrap is checked the same way', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ingest-schema-check-'));
    try {
      const config = loadConfig({ INGEST_DATA_DIR: root }, '/');
      // A new data directory is a copy that holds the schema (lib/db/pglite-template.ts): made by
      // initdb instead, as where the copy does not fit the installed PGlite, it holds none.
      const init = path.resolve(import.meta.dirname, '..', 'lib', 'db', 'pglite-init.ts');
      await promisify(execFile)(process.execPath, [...DATABASE_PROCESS_V8_FLAGS, init, config.database.embeddedDir]);
      try {
        await openDatabase(config, { bootstrap: false });
        assert.unreachable('expected a SchemaMissingError');
      } catch (error) {
        assert.instance(error, SchemaMissingError);
        assert.match((error as Error).message, /the embedded database at .*pglite lacks/);
        assert.match((error as Error).message, /`ingest db migrate` with the same INGEST_DATA_DIR/);
      }
      const db = await openDatabase(config);
      assert.is(await missingSchema(db), null, 'the bootstrap brings it to schema/');
      await db.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}

test.run();
