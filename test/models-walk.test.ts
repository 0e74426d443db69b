// @engine
// The walk with its model stages, on tier 1: a mock model server of the test's own, so the
// calls it serves can be counted and faults injected.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cp, copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EMBEDDING_MODEL } from '../lib/embed/client.ts';
import { randomUUID } from 'node:crypto';
import {
  contentChunks,
  recordEmbeddings,
  sourceDocuments,
  VectorCopy,
  WALK_TABLES,
  type Row,
  type TableSpec,
} from '../lib/db/tables.ts';
import { Sink } from '../lib/db/sink.ts';
import { sha256Hex } from '../lib/hash.ts';
import { publishRunContext } from '../lib/run-context.ts';
import { commitItem } from '../engine/item/commit.ts';
import { ItemMemos } from '../engine/item/item-memos.ts';
import { ProducerDebt, WalkDebt } from '../lib/state/producer-debt.ts';
import { walk } from '../engine/walk/walk.ts';
import { extractorMemoKey } from '../lib/llm/run-extractor.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import { ClassificationSchema, validator } from '../lib/llm/schemas.ts';
import { entityMentionKey, qaKey } from '../lib/ids.ts';
import { extractionWindows } from '../stages/extract/index.ts';
import { startMockServer, type MockOptions, type MockServer } from '../mock/server.ts';
import { snapshotRows, walkFixture, type WalkFixture } from './helpers/walk.ts';

const EXAMPLES = path.resolve(import.meta.dirname, '..', 'examples', 'corpus');
const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'];

let mock: MockServer;
let f: WalkFixture;
let saved: Record<string, string | undefined>;

async function setUp(options: MockOptions = {}, env: Record<string, string> = {}) {
  saved = Object.fromEntries(VARS.map((v) => [v, process.env[v]]));
  mock = await startMockServer(options);
  Object.assign(process.env, {
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'k',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'k',
  });
  f = await walkFixture({ env: { EXTRACTION_MODEL: 'model-a', ...env } });
  await cp(EXAMPLES, f.corpus, { recursive: true });
}
test.after.each(async () => {
  await f.dispose();
  await mock.close();
  for (const v of VARS) {
    if (saved[v] === undefined) delete process.env[v];
    else process.env[v] = saved[v];
  }
});

async function rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await f.target.db.query<T>(sql, params)).rows;
}

test('a walk of the example corpus fills every document table with schema-valid rows', async () => {
  await setUp();
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
  for (const table of [
    'source_documents',
    'content_chunks',
    'q_a_extractions',
    'entity_mentions',
    'entity_relationships',
    'record_embeddings',
  ]) {
    const [{ n }] = (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)) as [{ n: number }];
    assert.ok(n > 0, `${table} has rows`);
  }
  const valid = validator(ClassificationSchema);
  for (const { classification } of await rows<{ classification: Record<string, unknown> }>(
    'SELECT classification FROM source_documents',
  )) {
    const { in_taxonomy, ...rest } = classification;
    assert.ok(valid(rest), valid.explain());
    assert.type(in_taxonomy, 'boolean');
  }
  // Every chunk, answered Q&A pair and mention owns exactly one 1024-dimension embedding.
  const [owners] = await rows<{ missing: number; dims: number[] }>(
    `SELECT (SELECT count(*)::int FROM content_chunks c WHERE NOT EXISTS (SELECT 1 FROM record_embeddings e WHERE e.owner_kind = 'content_chunk' AND e.owner_id = c.id))
          + (SELECT count(*)::int FROM q_a_extractions q WHERE NOT EXISTS (SELECT 1 FROM record_embeddings e WHERE e.owner_kind = 'q_a_extraction' AND e.owner_id = q.id))
          + (SELECT count(*)::int FROM entity_mentions m WHERE NOT EXISTS (SELECT 1 FROM record_embeddings e WHERE e.owner_kind = 'entity_mention' AND e.owner_id = m.id)) AS missing,
            (SELECT array_agg(DISTINCT vector_dims(embedding)) FROM record_embeddings) AS dims`,
  );
  assert.is(owners!.missing, 0);
  assert.equal(owners!.dims, [1024]);
  assert.ok(mock.stats.messages > 0 && mock.stats.embeddings > 0);
});

test('a cold walk reports what the tables gained, copied vectors included, and its run record says the same', async () => {
  await setUp();
  // Texts shared across documents: most of this walk's vectors are copies of another owner's.
  await writeFile(path.join(f.corpus, 'ledger.md'), paragraphs(5));
  await writeFile(path.join(f.corpus, 'ledger-extended.md'), `${paragraphs(5)}\n\n${paragraph(5)}`);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
  const [record] = await rows<{ counts: Record<string, number> }>(
    "SELECT result -> 'counts' AS counts FROM pipeline_runs WHERE op_id = $1",
    [summary.opId],
  );
  for (const table of WALK_TABLES.map((spec) => spec.name)) {
    const [{ n }] = (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)) as [{ n: number }];
    assert.is(summary.rows[table] ?? 0, n, `${table}: the summary says what the table gained`);
    assert.is(record!.counts[`rows_${table}`] ?? 0, n, `${table}: the run record says the same`);
  }
  const [{ texts }] = (await rows<{ texts: number }>(
    'SELECT count(DISTINCT content_sha256)::int AS texts FROM record_embeddings',
  )) as [{ texts: number }];
  assert.ok(texts < summary.rows.record_embeddings!, 'some vectors were copies of another owner’s');
  // A copy is the very vector of its text, wherever it came from.
  const [{ differing }] = (await rows<{ differing: number }>(
    `SELECT count(*)::int AS differing FROM (SELECT content_sha256 FROM record_embeddings
       GROUP BY content_sha256 HAVING count(DISTINCT embedding::text) > 1) AS d`,
  )) as [{ differing: number }];
  assert.is(differing, 0);
});

test('changing EXTRACTION_MODEL on unchanged bytes memo-hits: no model call, no row changed', async () => {
  await setUp();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await snapshotRows(f);
  const calls = { ...mock.stats };
  await f.reopen(undefined, { EXTRACTION_MODEL: 'model-b' });
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(second.items.unchanged, 8);
  assert.equal([mock.stats.messages, mock.stats.embeddings], [calls.messages, calls.embeddings]);
  assert.equal(await snapshotRows(f), before);
});

test('extractor memos are scoped by LLM identity: the same text under another model is extracted anew', async () => {
  await setUp();
  await walk(f.lifespan, { sourcePath: f.corpus });
  // Same bytes at a new path: a changed item whose text the model-a memos already hold.
  await copyFile(path.join(f.corpus, 'policies/travel.md'), path.join(f.corpus, 'travel-a.md'));
  let calls = mock.stats.messages;
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(mock.stats.messages, calls, 'model-a memos serve model-a');
  await f.reopen(undefined, { EXTRACTION_MODEL: 'model-b' });
  await copyFile(path.join(f.corpus, 'policies/travel.md'), path.join(f.corpus, 'travel-b.md'));
  calls = mock.stats.messages;
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(mock.stats.messages - calls, 4, 'model-b asks the model for all four extractors');
  // full_reprocess under model-b re-extracts every document and restamps every row.
  calls = mock.stats.messages;
  const full = await walk(f.lifespan, { sourcePath: f.corpus, fullReprocess: true });
  assert.ok(mock.stats.messages - calls >= 4 * 8);
  const [{ stale }] = (await rows<{ stale: number }>(
    'SELECT count(*)::int AS stale FROM entity_mentions WHERE op_id <> $1',
    [full.opId],
  )) as [{ stale: number }];
  assert.is(stale, 0);
});

test('with 20 % injected 429/529 the walk completes with no item failure and counts its retries', async () => {
  await setUp({ faultRate: 0.2, faults: ['429', '529'], seed: 11 });
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
  assert.ok(mock.stats.faultsInjected > 0);
  assert.is(summary.counters.model_retry, mock.stats.faultsInjected);
});

test('a corrupted extractor memo heals: deleted, recomputed, counted', async () => {
  await setUp();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const text = await readFile(path.join(f.corpus, 'policies/travel.md'), 'utf8');
  const key = extractorMemoKey(PROMPTS.classification, f.lifespan.models.identity, extractionWindows(text)[0]!);
  assert.ok((await f.lifespan.store.getMemo(key)) !== undefined, 'the memo exists');
  await f.lifespan.store.putMemo(key, { label: 42 });
  await copyFile(path.join(f.corpus, 'policies/travel.md'), path.join(f.corpus, 'travel-copy.md'));
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.counters.memo_heal, 1);
  assert.is(summary.items.failed, 0);
  assert.ok(validator(ClassificationSchema)(await f.lifespan.store.getMemo(key)), 'the recomputed value replaced it');
});

test('blank answers write no row, and answered pairs keep their idx keys across re-walks', async () => {
  await setUp();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const [{ id: doc }] = (await rows<{ id: string }>(
    "SELECT id FROM source_documents WHERE rel_path = 'company/faq.md'",
  )) as [{ id: string }];
  const keysOf = async () =>
    (
      await rows<{ id: string; idx: number }>(
        'SELECT id, idx FROM q_a_extractions WHERE source_document_id = $1 ORDER BY idx',
        [doc],
      )
    ).map((r) => [r.idx, r.id]);
  assert.equal(
    await keysOf(),
    [0, 1, 3].map((i) => [i, qaKey(doc, i)]),
    'the blank third answer has no row',
  );
  const faq = path.join(f.corpus, 'company/faq.md');
  const original = await readFile(faq, 'utf8');
  await writeFile(
    faq,
    original.replace(
      'Q: Do you ship outside the EU?\nA:\n',
      'Q: Do you ship outside the EU?\nA: Yes, to Norway and Switzerland.\n',
    ),
  );
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(
    await keysOf(),
    [0, 1, 2, 3].map((i) => [i, qaKey(doc, i)]),
  );
  await writeFile(faq, original.replace(/A: Three to five working days[^\n]*/, 'A:   '));
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(
    await keysOf(),
    [1, 3].map((i) => [i, qaKey(doc, i)]),
    'emptying an answer removes its row only',
  );
  const [{ n }] = (await rows<{ n: number }>(
    "SELECT count(*)::int AS n FROM record_embeddings WHERE owner_kind = 'q_a_extraction'",
  )) as [{ n: number }];
  assert.is(n, 2, 'the removed pair’s embedding went with it');
});

/** Paragraph i of a document: one chunk each. */
const paragraph = (i: number) =>
  `Section ${i}. ${'Northwind keeps careful records of every shipment and invoice. '.repeat(17)}`;
const paragraphs = (n: number) => Array.from({ length: n }, (_, i) => paragraph(i)).join('\n\n');

test('text the table has embedded before is never sent to the model again', async () => {
  await setUp();
  const base = paragraphs(5);
  await writeFile(path.join(f.corpus, 'ledger.md'), base);
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = mock.stats.embeddedTexts;
  // Another document sharing five of its six chunks with the first.
  await writeFile(path.join(f.corpus, 'ledger-extended.md'), `${base}\n\n${paragraph(5)}`);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.items.changed, 1);
  const [{ n }] = (await rows<{ n: number }>(
    "SELECT count(*)::int AS n FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id WHERE d.rel_path = 'ledger-extended.md'",
  )) as [{ n: number }];
  assert.is(n, 6);
  assert.is(
    mock.stats.embeddedTexts - before,
    1,
    'only the new chunk was embedded; the other five vectors were copied',
  );
  const [{ vectors }] = (await rows<{ vectors: number }>(
    "SELECT count(*)::int AS vectors FROM record_embeddings e JOIN content_chunks c ON c.id = e.owner_id JOIN source_documents d ON d.id = c.source_document_id WHERE d.rel_path = 'ledger-extended.md'",
  )) as [{ vectors: number }];
  assert.is(vectors, 6);
});

test('an item whose vector copy lost its source (another edit deleted it meanwhile) embeds that text and commits', async () => {
  await setUp();
  const { db, store, models } = f.lifespan;
  const sink = new Sink(db, { batchRows: 100, flushMs: 5 });
  const [doc, op] = [randomUUID(), randomUUID()];
  const rowsOf = new Map<TableSpec, Row[]>([
    [
      sourceDocuments,
      [{ id: doc, rel_path: 'gone.md', content_sha256: 'g', byte_size: 1, media_type: 'text/markdown', op_id: op }],
    ],
    [
      contentChunks,
      [
        {
          id: doc,
          source_document_id: doc,
          reference_item_id: null,
          idx: 0,
          text: 'lost',
          char_start: 0,
          char_end: 4,
          op_id: op,
        },
      ],
    ],
    [
      recordEmbeddings,
      [
        {
          owner_kind: 'content_chunk',
          owner_id: doc,
          model: EMBEDDING_MODEL,
          embedding: new VectorCopy('lost'),
          content_sha256: sha256Hex('lost'),
          op_id: op,
        },
      ],
    ],
  ]);
  const before = mock.stats.embeddedTexts;
  publishRunContext(op, false);
  await commitItem({ db, sink, store, models, debt: new WalkDebt(new ProducerDebt(store)) }, new ItemMemos(store), {
    key: 'file:gone.md',
    rows: rowsOf,
    memo: {
      sha256: 'g',
      size: 1,
      mtimeNs: '0',
      ino: '0',
      mediaType: 'text/markdown',
      sourceDocumentId: doc,
      opId: op,
      rows: {},
    },
    previous: undefined,
  });
  await sink.close();
  assert.is(mock.stats.embeddedTexts - before, 1, 'the text was embedded after all');
  assert.equal(await rows('SELECT vector_dims(embedding) AS d FROM record_embeddings WHERE owner_id = $1', [doc]), [
    { d: 1024 },
  ]);
  assert.ok((await store.getItem('file:gone.md')).memo !== undefined, 'and the item committed');
});

test('a vector another model made is embedded again, not kept', async () => {
  await setUp();
  await writeFile(path.join(f.corpus, 'audit.md'), paragraphs(3));
  await walk(f.lifespan, { sourcePath: f.corpus });
  const auditVectors =
    "FROM record_embeddings e JOIN content_chunks c ON c.id = e.owner_id JOIN source_documents d ON d.id = c.source_document_id WHERE d.rel_path = 'audit.md'";
  await f.target.db.query(
    `UPDATE record_embeddings SET model = 'retired-model' WHERE owner_id IN (SELECT e.owner_id ${auditVectors})`,
  );
  const before = mock.stats.embeddedTexts;
  await writeFile(path.join(f.corpus, 'audit.md'), paragraphs(4));
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(mock.stats.embeddedTexts - before, 4, 'the three retired vectors and the new chunk');
  assert.equal(await rows(`SELECT DISTINCT e.model ${auditVectors}`), [{ model: EMBEDDING_MODEL }]);
});

test('mentions of an admin-curated entity chain under its curated canonical name, relationships too', async () => {
  await setUp();
  await writeFile(path.join(f.corpus, 'first.md'), '# first\n\nAcme Traders signed with Jane Doe last spring.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  // An admin merge renames the mention, records the alias it absorbed, and pins the row.
  await f.target.db.query(
    `UPDATE entity_mentions SET canonical_name = 'Acme Trading Company',
            metadata = metadata || '{"curation_pinned": true, "aliases": ["ACME traders"]}'::jsonb
      WHERE canonical_name = 'Acme Traders'`,
  );
  await writeFile(path.join(f.corpus, 'second.md'), '# second\n\nAcme Traders hired John Smith in May.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  const [{ id: second }] = (await rows<{ id: string }>(
    "SELECT id FROM source_documents WHERE rel_path = 'second.md'",
  )) as [{ id: string }];
  const mentions = await rows<{ id: string; canonical_name: string; surface_form: string }>(
    'SELECT id, canonical_name, surface_form FROM entity_mentions WHERE source_document_id = $1 ORDER BY canonical_name',
    [second],
  );
  assert.equal(
    mentions.map((m) => [m.canonical_name, m.surface_form]),
    [
      ['Acme Trading Company', 'Acme Traders'],
      ['John Smith', 'John Smith'],
    ],
  );
  assert.is(mentions[0]!.id, entityMentionKey(second, 'Acme Trading Company', 'organization'));
  const relations = await rows<{ source_canonical: string; target_canonical: string }>(
    'SELECT source_canonical, target_canonical FROM entity_relationships WHERE source_document_id = $1',
    [second],
  );
  assert.equal(relations, [{ source_canonical: 'Acme Trading Company', target_canonical: 'John Smith' }]);
});

test('idle mode makes no model call', async () => {
  await setUp();
  const summary = await walk(f.lifespan, { sourcePath: null });
  assert.ok(summary.idle);
  assert.equal([mock.stats.messages, mock.stats.embeddings], [0, 0]);
});

test.run();
