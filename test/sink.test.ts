// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fromSql } from 'pgvector';
import { randomUUID } from 'node:crypto';
import { Sink } from '../lib/db/sink.ts';
import { DatabaseStateStore } from '../lib/state/database-store.ts';
import { CopyValueError } from '../lib/db/copy-binary.ts';
import {
  contentChunks,
  entityMentions,
  isPinnedMention,
  recordEmbeddings,
  referenceItems,
  sourceDocuments,
  VectorCopy,
  type Row,
} from '../lib/db/tables.ts';
import { UnknownColumnError, VectorSourceGoneError, strategiesFor, upsertRows } from '../lib/db/upsert-rows.ts';
import { openTestDatabase, tableRows, targetEngine, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase();
});
test.after.each(async () => {
  await t.dispose();
});

function documentRow(id: string, opId: string, relPath = `docs/${id}.md`): Row {
  return {
    id,
    rel_path: relPath,
    content_sha256: `sha-${id}`,
    byte_size: 10,
    media_type: 'text/markdown',
    title: null,
    classification: { label: 'policy', tags: ['a', 'b'] },
    op_id: opId,
  };
}

function chunkRow(documentId: string, idx: number, text: string, opId: string): Row {
  return {
    id: randomUUID(),
    source_document_id: documentId,
    idx,
    text,
    char_start: 0,
    char_end: text.length,
    op_id: opId,
  };
}

/** 1024 float32 values with varied magnitudes, signs and awkward decimal expansions. */
function float32Vector(seed: number): Float32Array {
  const v = new Float32Array(1024);
  for (let i = 0; i < v.length; i++) v[i] = Math.sin(seed * 1000 + i) * 10 ** ((i % 9) - 4);
  return v;
}

async function count(table: string): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

// Text that exercises COPY's escaping and multi-byte encodings.
const AWKWARD_TEXT = 'tab\there\nnew line\r\nback\\slash "quotes" \'single\' \\N \u00e9\u4e2d\u6587 \u{1F600} end';

for (const strategy of strategiesFor(targetEngine)) {
  test(`${strategy}: upsert then re-upsert the same keys leaves one row each, op_id updated`, async () => {
    const [op1, op2] = [randomUUID(), randomUUID()];
    const docs = Array.from({ length: 25 }, () => documentRow(randomUUID(), op1));
    assert.is(await upsertRows(t.db, sourceDocuments, docs, strategy), 25);
    assert.is(
      await upsertRows(
        t.db,
        sourceDocuments,
        docs.map((d) => ({ ...d, op_id: op2, title: 'edited' })),
        strategy,
      ),
      25,
    );
    assert.is(await count('source_documents'), 25);
    const { rows } = await t.db.query<{ op_id: string; title: string; classification: unknown }>(
      'SELECT op_id, title, classification FROM source_documents',
    );
    assert.ok(rows.every((r) => r.op_id === op2 && r.title === 'edited'));
    assert.equal(rows[0]!.classification, { label: 'policy', tags: ['a', 'b'] });
  });

  test(`${strategy}: a batch holding one key twice keeps the last row`, async () => {
    const id = randomUUID();
    const op = randomUUID();
    const written = await upsertRows(
      t.db,
      sourceDocuments,
      [documentRow(id, op, 'first.md'), documentRow(id, op, 'second.md')],
      strategy,
    );
    assert.is(written, 1);
    const { rows } = await t.db.query<{ rel_path: string }>('SELECT rel_path FROM source_documents');
    assert.equal(rows, [{ rel_path: 'second.md' }]);
  });

  test(`${strategy}: text survives byte for byte, NULLs stay NULL`, async () => {
    const op = randomUUID();
    const doc = randomUUID();
    await upsertRows(t.db, sourceDocuments, [documentRow(doc, op)], strategy);
    await upsertRows(t.db, contentChunks, [chunkRow(doc, 0, AWKWARD_TEXT, op)], strategy);
    const { rows } = await t.db.query<{ text: string; reference_item_id: string | null }>(
      'SELECT text, reference_item_id FROM content_chunks',
    );
    assert.is(rows[0]!.text, AWKWARD_TEXT);
    assert.is(rows[0]!.reference_item_id, null);
  });

  test(`${strategy}: a vector(1024) round-trips exactly`, async () => {
    const op = randomUUID();
    const vectors = [float32Vector(1), float32Vector(2), new Float32Array(1024).fill(-0.1)];
    const owners = vectors.map(() => randomUUID());
    await upsertRows(
      t.db,
      recordEmbeddings,
      vectors.map((embedding, i) => ({
        owner_kind: 'content_chunk',
        owner_id: owners[i],
        model: 'text-embedding-3-large',
        embedding,
        op_id: op,
      })),
      strategy,
    );
    for (const [i, owner] of owners.entries()) {
      const { rows } = await t.db.query<{ embedding: string }>(
        'SELECT embedding::text AS embedding FROM record_embeddings WHERE owner_id = $1',
        [owner],
      );
      const back = fromSql(rows[0]!.embedding) as number[];
      assert.is(back.length, 1024);
      assert.equal(Float32Array.from(back), vectors[i], `vector ${i} changed on the way through ${strategy}`);
    }
  });
}

for (const strategy of strategiesFor(targetEngine)) {
  test(`${strategy}: a vector of the wrong dimension is refused by the database`, async () => {
    try {
      await upsertRows(
        t.db,
        recordEmbeddings,
        [
          {
            owner_kind: 'content_chunk',
            owner_id: randomUUID(),
            model: 'm',
            embedding: [1, 2, 3],
            op_id: randomUUID(),
          },
        ],
        strategy,
      );
      assert.unreachable('expected the insert to fail');
    } catch (error) {
      assert.match((error as Error).message, /expected 1024 dimensions/);
    }
  });

  test(`${strategy}: every column type the sink knows lands as written`, async () => {
    const op = randomUUID();
    const doc = randomUUID();
    const ref = randomUUID();
    const fetchedAt = new Date('2026-03-04T05:06:07.891Z');
    await upsertRows(t.db, sourceDocuments, [{ ...documentRow(doc, op), byte_size: 2 ** 40 + 3 }], strategy);
    await upsertRows(
      t.db,
      referenceItems,
      [
        {
          id: ref,
          url: 'https://example.org/a',
          title: null,
          content_sha256: 'h',
          classification: { x: [1, null, 'é'] },
          fetched_at: fetchedAt,
          op_id: op,
        },
      ],
      strategy,
    );
    await upsertRows(
      t.db,
      entityMentions,
      [
        {
          id: randomUUID(),
          source_document_id: doc,
          canonical_name: 'Ada Lovelace',
          entity_type: 'person',
          surface_form: 'Ada',
          confidence: 0.8125,
          metadata: { curation_pinned: false },
          op_id: op,
        },
      ],
      strategy,
    );
    const { rows } = await t.db.query<{
      byte_size: string;
      fetched_at: string;
      classification: unknown;
      confidence: number;
      metadata: unknown;
    }>(
      `SELECT d.byte_size::text, to_char(r.fetched_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS fetched_at, r.classification, m.confidence, m.metadata
         FROM source_documents d, reference_items r, entity_mentions m`,
    );
    assert.equal(rows, [
      {
        byte_size: String(2 ** 40 + 3),
        fetched_at: fetchedAt.toISOString(),
        classification: { x: [1, null, 'é'] },
        confidence: 0.8125,
        metadata: { curation_pinned: false },
      },
    ]);
  });
}

test('binary: a value that does not fit its column is a named error before anything is sent', async () => {
  const row = {
    owner_kind: 'content_chunk',
    owner_id: 'not-a-uuid',
    model: 'm',
    embedding: float32Vector(1),
    op_id: randomUUID(),
  };
  try {
    await upsertRows(t.db, recordEmbeddings, [row], 'binary');
    assert.unreachable('expected CopyValueError');
  } catch (error) {
    assert.instance(error, CopyValueError);
    assert.match((error as Error).message, /record_embeddings\.owner_id \(uuid\): "not-a-uuid" is not a uuid/);
  }
  try {
    await upsertRows(
      t.db,
      recordEmbeddings,
      [{ ...row, owner_id: randomUUID(), embedding: ['0.5', ...new Array(1023).fill(0)] }],
      'binary',
    );
    assert.unreachable('expected CopyValueError');
  } catch (error) {
    assert.instance(error, CopyValueError);
  }
  assert.is(await count('record_embeddings'), 0);
});

if (strategiesFor(targetEngine).includes('binary-bind')) {
  test('binary-bind: a vector that is not numbers is a named error before anything is sent', async () => {
    const row = {
      owner_kind: 'content_chunk',
      owner_id: randomUUID(),
      model: 'm',
      embedding: ['0.5', ...new Array(1023).fill(0)],
      op_id: randomUUID(),
    };
    try {
      await upsertRows(t.db, recordEmbeddings, [row], 'binary-bind');
      assert.unreachable('expected CopyValueError');
    } catch (error) {
      assert.instance(error, CopyValueError);
      assert.match((error as Error).message, /record_embeddings\.embedding \(vector\): .* is not an array of numbers/);
    }
    assert.is(await count('record_embeddings'), 0);
  });
}

for (const strategy of strategiesFor(targetEngine)) {
  test(`${strategy}: a conflict merge sets only the columns it names; a pinned row is never updated`, async () => {
    const op = randomUUID();
    const doc = randomUUID();
    await upsertRows(t.db, sourceDocuments, [documentRow(doc, op)], strategy);
    const mention = (id: string, surface: string, confidence: number, pinned: boolean) => ({
      id,
      source_document_id: doc,
      canonical_name: 'Ada Lovelace',
      entity_type: 'person',
      surface_form: surface,
      confidence,
      metadata: { curation_pinned: pinned },
      op_id: op,
    });
    const [open, pinned] = [randomUUID(), randomUUID()];
    await upsertRows(
      t.db,
      entityMentions,
      [mention(open, 'Ada', 0.5, false), mention(pinned, 'Ada', 0.5, true)],
      strategy,
    );
    const keepHigher = { confidence: 'GREATEST(entity_mentions.confidence, EXCLUDED.confidence)' };
    await upsertRows(
      t.db,
      entityMentions,
      [mention(open, 'Countess', 0.75, false), mention(pinned, 'Countess', 0.75, false)],
      strategy,
      keepHigher,
    );
    const { rows } = await t.db.query<{ id: string; surface_form: string; confidence: number; pinned: boolean }>(
      `SELECT id::text, surface_form, confidence, ${isPinnedMention()} AS pinned FROM entity_mentions`,
    );
    assert.equal(
      new Map(rows.map((r) => [r.id, r])),
      new Map([
        [open, { id: open, surface_form: 'Ada', confidence: 0.75, pinned: false }],
        [pinned, { id: pinned, surface_form: 'Ada', confidence: 0.5, pinned: true }],
      ]),
    );
    try {
      await upsertRows(t.db, entityMentions, [mention(open, 'Ada', 1, false)], strategy, { nickname: "'x'" });
      assert.unreachable('expected a named error');
    } catch (error) {
      assert.instance(error, UnknownColumnError);
    }
  });
}

test('a row with a column the table spec does not know is a named error', async () => {
  try {
    await upsertRows(t.db, sourceDocuments, [{ ...documentRow(randomUUID(), randomUUID()), colour: 'blue' }], 'values');
    assert.unreachable('expected UnknownColumnError');
  } catch (error) {
    assert.instance(error, UnknownColumnError);
  }
});

test('sink: a write resolves only once its rows are durable, across tables in parent-first order', async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 20 });
  const op = randomUUID();
  const doc = randomUUID();
  // Children queued before their parent: the flush still writes the parent first.
  const chunks = sink.write(tableRows(contentChunks, [chunkRow(doc, 0, 'a', op), chunkRow(doc, 1, 'b', op)]));
  const parent = sink.write(tableRows(sourceDocuments, [documentRow(doc, op)]));
  assert.is(await count('content_chunks'), 0, 'nothing lands before the flush');
  await Promise.all([chunks, parent]);
  assert.is(await count('content_chunks'), 2);
  assert.is(await count('source_documents'), 1);
  assert.is(sink.rowsWritten.get('content_chunks'), 2);
  await sink.close();
});

test('sink: reaching batchRows flushes at once instead of waiting for the timer', async () => {
  const sink = new Sink(t.db, { batchRows: 3, flushMs: 60_000 });
  const op = randomUUID();
  const below = sink.write(tableRows(sourceDocuments, [documentRow(randomUUID(), op), documentRow(randomUUID(), op)]));
  assert.is(sink.pendingRows, 2, 'below the threshold rows wait for the timer');
  const reached = sink.write(tableRows(sourceDocuments, [documentRow(randomUUID(), op)]));
  assert.is(sink.pendingRows, 0, 'the threshold hands the batch to a flush synchronously');
  await Promise.all([below, reached]);
  assert.is(await count('source_documents'), 3);
  await sink.close();
});

test('sink: one bad write fails alone; the rest of the batch lands', async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 10 });
  const op = randomUUID();
  const good = randomUUID();
  const orphanParent = randomUUID(); // never written: its chunk violates the foreign key
  const results = await Promise.allSettled([
    sink.write(tableRows(sourceDocuments, [documentRow(good, op)])),
    sink.write(tableRows(contentChunks, [chunkRow(good, 0, 'kept', op)])),
    sink.write(tableRows(contentChunks, [chunkRow(orphanParent, 0, 'orphan', op)])),
    sink.write(tableRows(contentChunks, [chunkRow(good, 1, 'also kept', op)])),
  ]);
  assert.equal(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  assert.match(String((results[2] as PromiseRejectedResult).reason), /foreign key/);
  const { rows } = await t.db.query<{ text: string }>('SELECT text FROM content_chunks ORDER BY idx');
  assert.equal(
    rows.map((r) => r.text),
    ['kept', 'also kept'],
  );
  await sink.close();
});

test("sink: a write's entries and own work run in its rows' transaction, after them; when it fails, its rows go back", async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 10 });
  const memos = new DatabaseStateStore(t.db).inRowsTransaction;
  const op = randomUUID();
  const [kept, undone] = [randomUUID(), randomUUID()];
  const seen: number[] = [];
  const results = await Promise.allSettled([
    sink.write(tableRows(sourceDocuments, [documentRow(kept, op)]), {
      memos: { writer: memos, entries: [['memo:b', 2]] },
      within: async (tx) => {
        // Inside the transaction, after the rows: they are visible here.
        const { rows } = await tx.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM source_documents WHERE id = $1',
          [kept],
        );
        seen.push(rows[0]!.n);
        await tx.query('UPDATE source_documents SET title = $1 WHERE id = $2', ['set within', kept]);
      },
    }),
    sink.write(tableRows(sourceDocuments, [documentRow(undone, op)]), {
      memos: { writer: memos, entries: [['memo:c', 3]] },
      within: async (tx) => {
        await tx.query('SELECT 1 / 0');
      },
    }),
    // Nothing but work of its own: still a transaction of its own.
    sink.write(new Map(), {
      memos: { writer: memos, entries: [['memo:a', 1]] },
      within: async (tx) => {
        await tx.query('UPDATE source_documents SET byte_size = 99 WHERE id = $1', [kept]);
      },
    }),
  ]);
  assert.equal(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.match(String((results[1] as PromiseRejectedResult).reason), /division by zero/);
  assert.ok(seen.length > 0 && seen.every((n) => n === 1), 'the rows were written before the work');
  const { rows } = await t.db.query<{ id: string; title: string; byte_size: number }>(
    'SELECT id, title, byte_size::int AS byte_size FROM source_documents',
  );
  assert.equal(rows, [{ id: kept, title: 'set within', byte_size: 99 }], 'the failed write left no row');
  assert.is(sink.rowsWritten.get('source_documents'), 1, 'only committed rows are counted');
  const { rows: entries } = await t.db.query<{ key: string; value: number }>(
    "SELECT key, value FROM engine_memos WHERE key LIKE 'memo:%' ORDER BY key",
  );
  assert.equal(
    entries,
    [
      { key: 'memo:a', value: 1 },
      { key: 'memo:b', value: 2 },
    ],
    "the failed write's entry went back with its rows",
  );
  await sink.close();
});

test('sink: embeddings go through the measured vector path of the engine and round-trip', async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 10 });
  const op = randomUUID();
  const owner = randomUUID();
  const embedding = float32Vector(7);
  await sink.write(
    tableRows(recordEmbeddings, [
      { owner_kind: 'q_a_extraction', owner_id: owner, model: 'text-embedding-3-large', embedding, op_id: op },
    ]),
  );
  const { rows } = await t.db.query<{ embedding: string }>(
    'SELECT embedding::text AS embedding FROM record_embeddings WHERE owner_id = $1',
    [owner],
  );
  assert.equal(Float32Array.from(fromSql(rows[0]!.embedding) as number[]), embedding);
  await sink.close();
});

test('sink: on the binary vector path a malformed embedding fails its own write; the batch around it lands', async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 10 });
  const op = randomUUID();
  const doc = randomUUID();
  const embedding = (owner: string, vector: unknown) => ({
    owner_kind: 'content_chunk',
    owner_id: owner,
    model: 'text-embedding-3-large',
    embedding: vector,
    op_id: op,
  });
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
  const results = await Promise.allSettled([
    sink.write(tableRows(sourceDocuments, [documentRow(doc, op)])),
    sink.write(tableRows(recordEmbeddings, [embedding(a, float32Vector(1))])),
    sink.write(tableRows(recordEmbeddings, [embedding(b, [Number.NaN, ...new Array(1023).fill(0)])])),
    sink.write(tableRows(recordEmbeddings, [embedding(c, float32Vector(3)), embedding(a, float32Vector(4))])),
  ]);
  assert.equal(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  assert.match(String((results[2] as PromiseRejectedResult).reason), /NaN not allowed in vector/);
  const { rows } = await t.db.query<{ owner_id: string; embedding: string }>(
    'SELECT owner_id::text, embedding::text FROM record_embeddings ORDER BY owner_id',
  );
  assert.equal(
    rows.map((r) => r.owner_id),
    [a, c].sort(),
  );
  // a was written twice (two items); the later write won.
  assert.equal(Float32Array.from(fromSql(rows.find((r) => r.owner_id === a)!.embedding) as number[]), float32Vector(4));
  assert.is(await count('source_documents'), 1);
  await sink.close();
});

test("sink: an item's rows land together or not at all: a bad embedding keeps its chunk out too", async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 10 });
  const op = randomUUID();
  const [good, bad] = [randomUUID(), randomUUID()];
  const item = (doc: string, vector: unknown) =>
    new Map([
      [sourceDocuments, [documentRow(doc, op)]],
      [contentChunks, [chunkRow(doc, 0, doc, op)]],
      [
        recordEmbeddings,
        [{ owner_kind: 'content_chunk', owner_id: doc, model: 'text-embedding-3-large', embedding: vector, op_id: op }],
      ],
    ]);
  const results = await Promise.allSettled([
    sink.write(item(good, float32Vector(2))),
    sink.write(item(bad, [Number.NaN, ...new Array(1023).fill(0)])),
  ]);
  assert.equal(
    results.map((r) => r.status),
    ['fulfilled', 'rejected'],
  );
  const { rows } = await t.db.query<{ text: string }>('SELECT text FROM content_chunks');
  assert.equal(rows, [{ text: good }], 'the failed item left no chunk behind');
  assert.is(await count('source_documents'), 1);
  assert.is(await count('record_embeddings'), 1);
  assert.is(sink.rowsWritten.get('content_chunks'), 1, 'only committed rows are counted');
  await sink.close();
});

test('a vector copy takes the vector of a row with the same text, written in the same batch or before', async () => {
  const op = randomUUID();
  const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
  const row = (owner: string, embedding: unknown, hash: string) => ({
    owner_kind: 'content_chunk',
    owner_id: owner,
    model: 'text-embedding-3-large',
    embedding,
    content_sha256: hash,
    op_id: op,
  });
  // The source row and its copy in one statement's batch: the copy is written after it.
  const written = await upsertRows(
    t.db,
    recordEmbeddings,
    [row(second, new VectorCopy('text'), 'h1'), row(first, float32Vector(5), 'h1')],
    strategiesFor(t.db.kind)[0]!,
  );
  assert.is(written, 2);
  await upsertRows(t.db, recordEmbeddings, [row(third, new VectorCopy('text'), 'h1')], 'unnest');
  const { rows } = await t.db.query<{ n: number }>(
    "SELECT count(DISTINCT embedding::text)::int AS n FROM record_embeddings WHERE content_sha256 = 'h1'",
  );
  assert.is(rows[0]!.n, 1, 'three owners, one vector');
  try {
    await upsertRows(t.db, recordEmbeddings, [row(randomUUID(), new VectorCopy('other'), 'h-none')], 'unnest');
    assert.unreachable('expected VectorSourceGoneError');
  } catch (error) {
    assert.instance(error, VectorSourceGoneError);
  }
  assert.is(await count('record_embeddings'), 3, 'nothing was written for the copy without a source');
});

test('sink: the same key written by two items in one batch lands once, last write wins', async () => {
  const sink = new Sink(t.db, { batchRows: 1000, flushMs: 10 });
  const id = randomUUID();
  const [op1, op2] = [randomUUID(), randomUUID()];
  await Promise.all([
    sink.write(tableRows(sourceDocuments, [documentRow(id, op1)])),
    sink.write(tableRows(sourceDocuments, [documentRow(id, op2)])),
  ]);
  const { rows } = await t.db.query<{ op_id: string }>('SELECT op_id FROM source_documents');
  assert.equal(rows, [{ op_id: op2 }]);
  await sink.close();
});

test.run();
