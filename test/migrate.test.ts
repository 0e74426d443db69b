// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadMigrations, migrate, MigrationError, SCHEMA_DIR, type Migration } from '../lib/db/migrate.ts';
import { RELEASED_FILE_CHECKSUMS } from '../lib/db/released-checksums.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

const PLATFORM_TABLES = [
  'source_documents',
  'q_a_extractions',
  'entity_mentions',
  'entity_relationships',
  'content_chunks',
  'reference_items',
  'record_embeddings',
  'feed_articles',
  'pipeline_runs',
  'processing_queue',
  'q_a_dedup_proposals',
];

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase({ migrated: false });
});
test.after.each(async () => {
  await t.dispose();
});

test('migrations apply once, then a second run is a no-op', async () => {
  const all = await loadMigrations();
  const first = await migrate(t.db);
  assert.is(first.applied.length, all.length);
  assert.is(first.alreadyApplied, 0);
  const second = await migrate(t.db);
  assert.is(second.applied.length, 0);
  assert.is(second.alreadyApplied, all.length);
  const { rows } = await t.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  assert.equal(
    rows.map((r) => r.version),
    all.map((m) => m.version),
  );
});

test('every table of the specification exists, with vector(1024) embeddings', async () => {
  await migrate(t.db);
  for (const table of PLATFORM_TABLES) {
    const { rows } = await t.db.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [table]);
    assert.is(rows[0]?.found, table, `missing table ${table}`);
  }
  const { rows } = await t.db.query<{ type: string }>(
    `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = 'record_embeddings'::regclass AND attname = 'embedding'`,
  );
  assert.is(rows[0]?.type, 'vector(1024)');
});

test('embeddings are stored inline (PLAIN), not in the TOAST table, on both engines', async () => {
  await migrate(t.db);
  const { rows } = await t.db.query<{ storage: string }>(
    `SELECT attstorage::text AS storage FROM pg_attribute WHERE attrelid = 'record_embeddings'::regclass AND attname = 'embedding'`,
  );
  assert.is(rows[0]?.storage, 'p');
});

test('no foreign key points into entity_mentions or entity_relationships', async () => {
  await migrate(t.db);
  const { rows } = await t.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_constraint
      WHERE contype = 'f' AND confrelid IN ('entity_mentions'::regclass, 'entity_relationships'::regclass)`,
  );
  assert.is(rows[0]?.n, 0);
});

/** A copy of schema/ with one file's text edited, as a later release might ship it. */
async function editedSchema(file: string, edit: (text: string) => string): Promise<Migration[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'schema-'));
  try {
    await cp(SCHEMA_DIR, dir, { recursive: true });
    const target = path.join(dir, file);
    const text = await readFile(target, 'utf8');
    const edited = edit(text);
    assert.is.not(edited, text, `the edit changed ${file}`);
    await writeFile(target, edited);
    return await loadMigrations(dir);
  } finally {
    await rm(dir, { recursive: true });
  }
}

/** Makes the schema_migrations rows what a release that checksummed whole files recorded. */
async function recordReleasedFileChecksums(): Promise<void> {
  for (const [version, released] of RELEASED_FILE_CHECKSUMS) {
    await t.db.query('UPDATE schema_migrations SET checksum = $2 WHERE version = $1', [version, released.file]);
  }
}

async function recordedChecksums(): Promise<string[]> {
  const { rows } = await t.db.query<{ checksum: string }>('SELECT checksum FROM schema_migrations ORDER BY version');
  return rows.map((r) => r.checksum);
}

const SQL_EDIT = (text: string) => text.replace('LANGUAGE sql STABLE', 'LANGUAGE sql VOLATILE');

/** Migrating with 0002's SQL edited fails by name. */
async function refusesEditedSql(): Promise<void> {
  const edited = await editedSchema('0002_answered_predicate.sql', SQL_EDIT);
  try {
    await migrate(t.db, edited);
    assert.unreachable('expected a MigrationError');
  } catch (error) {
    assert.instance(error, MigrationError);
    assert.match((error as Error).message, /0002_answered_predicate\.sql changed after it was applied/);
  }
}

test("a change to an applied migration's SQL is refused by name", async () => {
  await migrate(t.db);
  await refusesEditedSql();
});

test("a change to an applied migration's comments and layout is accepted", async () => {
  const all = await loadMigrations();
  await migrate(t.db, all);
  const edited = await editedSchema(
    '0003_engine_instance.sql',
    (text) =>
      `/* A new note, /* nested */ in a block. */\n-- And one more line.\n${text.replace(/\n/g, '\n\n')}  -- trailing\n`,
  );
  const report = await migrate(t.db, edited);
  assert.is(report.applied.length, 0);
  assert.is(report.alreadyApplied, all.length);
});

test('a database migrated when checksums covered the whole file migrates cleanly and keeps its rows', async () => {
  const all = await loadMigrations();
  await migrate(t.db, all);
  await recordReleasedFileChecksums();
  const released = all.map((m) => RELEASED_FILE_CHECKSUMS.get(m.version)?.file ?? m.checksum);
  assert.equal(await recordedChecksums(), released);
  const report = await migrate(t.db, all);
  assert.is(report.applied.length, 0);
  assert.is(report.alreadyApplied, all.length);
  assert.equal(await recordedChecksums(), released, 'the earlier release, rolled back to, still finds its checksums');
});

test('on a database migrated when checksums covered the whole file, a change to the SQL is still refused by name', async () => {
  await migrate(t.db);
  await recordReleasedFileChecksums();
  await refusesEditedSql();
  const { rows } = await t.db.query<{ checksum: string }>('SELECT checksum FROM schema_migrations WHERE version = 2');
  assert.is(rows[0]?.checksum, RELEASED_FILE_CHECKSUMS.get(2)?.file, 'the refused row is left as it was');
});

test('a failing migration rolls back whole and names itself', async () => {
  const all = await loadMigrations();
  const broken = [
    ...all,
    { version: 9999, name: 'broken', sql: 'CREATE TABLE half_done (id int); SELECT no_such_fn();', checksum: 'x' },
  ];
  try {
    await migrate(t.db, broken);
    assert.unreachable('expected a MigrationError');
  } catch (error) {
    assert.instance(error, MigrationError);
    assert.match((error as Error).message, /migration 9999 \(broken\) failed/);
  }
  const { rows } = await t.db.query<{ found: string | null }>("SELECT to_regclass('half_done')::text AS found");
  assert.is(rows[0]?.found, null);
  const applied = await t.db.query('SELECT 1 FROM schema_migrations WHERE version = 9999');
  assert.is(applied.rows.length, 0);
});

const DOC = '00000000-0000-4000-8000-000000000001';
const OP = '00000000-0000-4000-8000-0000000000aa';

async function insertAnswers(answers: (string | null)[]): Promise<void> {
  await t.db.query(
    `INSERT INTO source_documents (id, rel_path, content_sha256, byte_size, media_type, op_id)
     VALUES ($1, 'a.md', 'h', 1, 'text/markdown', $2) ON CONFLICT DO NOTHING`,
    [DOC, OP],
  );
  for (const [idx, answer] of answers.entries()) {
    await t.db.query(
      `INSERT INTO q_a_extractions (id, source_document_id, idx, question_text, answer_text, op_id)
       VALUES (gen_random_uuid(), $1, $2, 'q?', $3, $4)`,
      [DOC, idx, answer, OP],
    );
  }
}

const BLANKS = [null, '', '   ', '\n\t\r', '\u00a0\u2003\u3000\ufeff'];

test('promotion_candidates applies the answered predicate', async () => {
  await migrate(t.db);
  await insertAnswers([...BLANKS, 'yes', ' 42 ', '\u00a0x']);
  const { rows } = await t.db.query<{ answer_text: string }>(
    'SELECT answer_text FROM promotion_candidates() ORDER BY idx',
  );
  assert.equal(
    rows.map((r) => r.answer_text),
    ['yes', ' 42 ', '\u00a0x'],
  );
});

test('the answered predicate agrees with JavaScript whitespace on every whitespace character', async () => {
  await migrate(t.db);
  const whitespace = [...Array(0x3001).keys(), 0xfeff]
    .map((c) => String.fromCodePoint(c))
    .filter((ch) => /^\s$/.test(ch));
  const { rows } = await t.db.query<{ answered: boolean }>(
    'SELECT q_a_is_answered(ch) AS answered FROM unnest($1::text[]) AS ch',
    [whitespace],
  );
  assert.is(rows.length, whitespace.length);
  assert.ok(rows.every((r) => r.answered === false));
});

test('blank answers minted before the gate are deleted by the migration', async () => {
  const all = await loadMigrations();
  await migrate(t.db, all.slice(0, 1));
  await insertAnswers([...BLANKS, 'kept']);
  await migrate(t.db, all);
  const { rows } = await t.db.query<{ answer_text: string | null }>('SELECT answer_text FROM q_a_extractions');
  assert.equal(
    rows.map((r) => r.answer_text),
    ['kept'],
  );
});

test('embeddings stranded without their owner by killed walks are deleted by the migration; owned ones stay', async () => {
  const all = await loadMigrations();
  await migrate(
    t.db,
    all.filter((m) => m.version < 8),
  );
  await insertAnswers(['kept']);
  const vector = `[${new Array(1024).fill(0.5).join(',')}]`;
  await t.db.query(
    `INSERT INTO record_embeddings (owner_kind, owner_id, model, embedding, op_id)
     SELECT 'q_a_extraction', id, 'm', $1::vector, $2::uuid FROM q_a_extractions
     UNION ALL SELECT 'entity_mention', gen_random_uuid(), 'm', $1::vector, $2::uuid`,
    [vector, OP],
  );
  await migrate(t.db, all);
  const { rows } = await t.db.query<{ owner_kind: string }>('SELECT owner_kind FROM record_embeddings');
  assert.equal(rows, [{ owner_kind: 'q_a_extraction' }]);
});

test('mentions flagged unresolved before 0011 leave their walk pending, flag removed; the others stay as they are', async () => {
  const all = await loadMigrations();
  await migrate(
    t.db,
    all.filter((m) => m.version < 11),
  );
  await insertAnswers([]);
  const flaggedOp = '00000000-0000-4000-8000-0000000000bb';
  await t.db.query(
    `INSERT INTO entity_mentions (id, source_document_id, canonical_name, entity_type, surface_form, metadata, op_id)
     VALUES (gen_random_uuid(), $1, 'Acme', 'organization', 'Acme', '{"unresolved": true}', $2),
            (gen_random_uuid(), $1, 'Zenith', 'organization', 'Zenith', '{"curation_pinned": true}', $3)`,
    [DOC, flaggedOp, OP],
  );
  await migrate(t.db, all);
  const { rows: done } = await t.db.query<{ op_id: string }>('SELECT op_id::text FROM entity_resolution_ops');
  assert.equal(done, [{ op_id: OP }], 'the walk that left a mention flagged is not done');
  const { rows } = await t.db.query<{ canonical_name: string; metadata: object }>(
    'SELECT canonical_name, metadata FROM entity_mentions ORDER BY canonical_name',
  );
  assert.equal(rows, [
    { canonical_name: 'Acme', metadata: {} },
    { canonical_name: 'Zenith', metadata: { curation_pinned: true } },
  ]);
});

test("0022 builds the Q&A index again with m 8 and ef_construction 64, over the pairs already embedded, and the pass's nearest query still reads it", async () => {
  const all = await loadMigrations();
  await migrate(
    t.db,
    all.filter((m) => m.version < 22),
  );
  await insertAnswers(['near', 'far']);
  const vector = (first: number) => `[${[first, ...new Array<number>(1023).fill(0.5)].join(',')}]`;
  await t.db.query(
    `INSERT INTO record_embeddings (owner_kind, owner_id, model, embedding, op_id)
     SELECT 'q_a_extraction', id, 'm', (CASE WHEN answer_text = 'near' THEN $1 ELSE $2 END)::vector, $3::uuid
       FROM q_a_extractions`,
    [vector(0.5), vector(-40), OP],
  );
  await migrate(t.db, all);
  const { rows: index } = await t.db.query<{ def: string }>(
    `SELECT pg_get_indexdef('record_embeddings_q_a_hnsw_idx'::regclass) AS def`,
  );
  assert.match(
    index[0]!.def,
    /USING hnsw \(embedding vector_cosine_ops\) WITH \(m='?8'?, ef_construction='?64'?\) WHERE \(owner_kind = 'q_a_extraction'::text\)$/,
  );
  // The nearest block's shape (stages/qa-dedup/candidates.ts). With two rows the planner would
  // rather sort them, so sorting and the sequential scan are priced out: a predicate the partial
  // index no longer implied would leave a plan without it.
  const nearest = `SELECT a.answer_text FROM record_embeddings e JOIN q_a_extractions a ON a.id = e.owner_id
                    WHERE e.owner_kind = 'q_a_extraction' ORDER BY e.embedding <=> '${vector(0.4)}' LIMIT 20`;
  const { plan, found } = await t.db.transaction(async (tx) => {
    await tx.query('SET LOCAL enable_seqscan = off');
    await tx.query('SET LOCAL enable_sort = off');
    await tx.query('SET LOCAL hnsw.iterative_scan = relaxed_order');
    const plan = (await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${nearest}`)).rows.map((r) => r['QUERY PLAN']);
    const found = (await tx.query<{ answer_text: string }>(nearest)).rows.map((r) => r.answer_text);
    return { plan, found };
  });
  assert.ok(
    plan.some((line) => line.includes('Index Scan using record_embeddings_q_a_hnsw_idx')),
    plan.join('\n'),
  );
  assert.equal(found, ['near', 'far'], 'the rows embedded before 0022 are in the rebuilt index, nearest first');
});

test.run();
