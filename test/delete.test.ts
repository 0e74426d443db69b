// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { deleteRowsByKey } from '../lib/db/delete.ts';
import { entityMentions, recordEmbeddings, rowKey, sourceDocuments, type Row } from '../lib/db/tables.ts';
import { strategiesFor, upsertRows } from '../lib/db/upsert-rows.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;
const DOC = randomUUID();
const OP = randomUUID();
test.before.each(async () => {
  t = await openTestDatabase();
  await upsertRows(
    t.db,
    sourceDocuments,
    [
      {
        id: DOC,
        rel_path: 'a.md',
        content_sha256: 'h',
        byte_size: 1,
        media_type: 'text/markdown',
        title: null,
        classification: null,
        op_id: OP,
      },
    ],
    'values',
  );
});
test.after.each(() => t.dispose());

const mention = (name: string, metadata: object = {}): Row => ({
  id: randomUUID(),
  source_document_id: DOC,
  canonical_name: name,
  entity_type: 'org',
  surface_form: name,
  confidence: 0.9,
  metadata,
  op_id: OP,
});

async function names(): Promise<string[]> {
  const { rows } = await t.db.query<{ canonical_name: string }>(
    'SELECT canonical_name FROM entity_mentions ORDER BY canonical_name',
  );
  return rows.map((r) => r.canonical_name);
}

test('rows are deleted by exact key and nothing else', async () => {
  const rows = ['Acme', 'Globex', 'Initech'].map((n) => mention(n));
  await upsertRows(t.db, entityMentions, rows, 'unnest');
  const deleted = await deleteRowsByKey(t.db, entityMentions, [rowKey(entityMentions, rows[1]!), randomUUID()]);
  assert.is(deleted, 1);
  assert.equal(await names(), ['Acme', 'Initech']);
});

test('composite keys (record_embeddings) delete by both parts', async () => {
  const owner = randomUUID();
  const embedding = new Float32Array(1024).fill(0.5);
  await upsertRows(
    t.db,
    recordEmbeddings,
    [
      { owner_kind: 'content_chunk', owner_id: owner, model: 'm', embedding, op_id: OP },
      { owner_kind: 'q_a_extraction', owner_id: owner, model: 'm', embedding, op_id: OP },
    ],
    'values',
  );
  assert.is(await deleteRowsByKey(t.db, recordEmbeddings, [`content_chunk:${owner}`]), 1);
  const { rows } = await t.db.query<{ owner_kind: string }>('SELECT owner_kind FROM record_embeddings');
  assert.equal(rows, [{ owner_kind: 'q_a_extraction' }]);
});

test('a pinned (curated) mention is never deleted by a walk', async () => {
  const pinned = mention('Curated Corp', { curation_pinned: true });
  const plain = mention('Plain Corp', { curation_pinned: false });
  await upsertRows(t.db, entityMentions, [pinned, plain], 'unnest');
  assert.is(
    await deleteRowsByKey(t.db, entityMentions, [rowKey(entityMentions, pinned), rowKey(entityMentions, plain)]),
    1,
  );
  assert.equal(await names(), ['Curated Corp']);
});

for (const strategy of strategiesFor(targetEngine)) {
  test(`${strategy}: an upsert never overwrites a pinned mention`, async () => {
    const pinned = mention('Curated Corp', { curation_pinned: true, merged_from: ['x'] });
    await upsertRows(t.db, entityMentions, [pinned], 'values');
    const op2 = randomUUID();
    await upsertRows(
      t.db,
      entityMentions,
      [{ ...pinned, surface_form: 'walk wrote this', metadata: {}, op_id: op2 }],
      strategy,
    );
    const { rows } = await t.db.query<{ surface_form: string; metadata: object; op_id: string }>(
      'SELECT surface_form, metadata, op_id FROM entity_mentions',
    );
    assert.equal(rows, [
      { surface_form: 'Curated Corp', metadata: { curation_pinned: true, merged_from: ['x'] }, op_id: OP },
    ]);
  });
}

test.run();
