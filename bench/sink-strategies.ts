// The sink against the raw limit of the same database in the same run.
//
// Part 1, statement shapes: rows/s of each UPSERT shape of lib/db/upsert-rows.ts for text rows
// (content_chunks) and vector rows (record_embeddings), on fresh keys (insert path) and on the
// same keys again (conflict/update path).
// Part 2, the writer per table: rows/s of the real Sink (its measured default shape per table,
// parent-first flushes of `--batch` rows, one transaction each) for every table a walk writes.
//
// The raw limit is a plain COPY of the same rows into an empty unlogged table with no key,
// index or foreign key, in text and in binary format; the faster of the two is the limit.
//
//   node bench/sink-strategies.ts [--rows N] [--vector-rows N] [--docs N] [--repeat N] [--batch N] [--json FILE]
//
// Runs on PGlite always, and on PostgreSQL too when ENGINE_DB_DSN is set
// (`bash scripts/pg-with-vector.sh node bench/sink-strategies.ts`).

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Database } from '../lib/db/database.ts';
import { Sink } from '../lib/db/sink.ts';
import {
  contentChunks,
  entityMentions,
  entityRelationships,
  qaExtractions,
  recordEmbeddings,
  referenceItems,
  sourceDocuments,
  WALK_TABLES,
  type Row,
  type TableSpec,
} from '../lib/db/tables.ts';
import { copyPayload, defaultStrategy, strategiesFor, upsertRows, type UpsertStrategy } from '../lib/db/upsert-rows.ts';
import { openTestDatabase, tableRows } from './scratch-database.ts';
import { median, printTable, rate, timed, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '20000' },
    'vector-rows': { type: 'string', default: '4000' },
    docs: { type: 'string', default: '400' },
    repeat: { type: 'string', default: '3' },
    batch: { type: 'string', default: '500' },
    json: { type: 'string' },
  },
});
const TEXT_ROWS = Number(args.rows);
const VECTOR_ROWS = Number(args['vector-rows']);
const DOCS = Number(args.docs);
const REPEAT = Number(args.repeat);
const BATCH = Number(args.batch);

interface Measurement {
  engine: string;
  part: 'shapes' | 'writer';
  table: string;
  strategy: UpsertStrategy | 'raw COPY text' | 'raw COPY binary';
  phase: 'insert' | 'update' | 'limit';
  rows: number;
  rowsPerSecond: number;
  ratioToLimit: number;
}

const CHUNK_TEXT = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(9);

function vector(seed: number): Float32Array {
  const v = new Float32Array(1024);
  for (let d = 0; d < 1024; d++) v[d] = Math.sin(seed * 31 + d) / 32;
  return v;
}

/** A walk's rows for `docs` documents: per document 10 chunks, 5 Q&A pairs, 5 mentions, 3 relationships, their embeddings. */
function walkRows(docs: number, opId: string): Map<TableSpec, Row[]> {
  const out = new Map<TableSpec, Row[]>(WALK_TABLES.map((spec) => [spec, []]));
  const push = (spec: TableSpec, row: Row) => out.get(spec)!.push(row);
  let seed = 0;
  const embed = (ownerKind: string, ownerId: string) =>
    push(recordEmbeddings, {
      owner_kind: ownerKind,
      owner_id: ownerId,
      model: 'text-embedding-3-large',
      embedding: vector(seed++),
      content_sha256: `h${seed}`,
      op_id: opId,
    });
  for (let d = 0; d < docs; d++) {
    const doc = randomUUID();
    push(sourceDocuments, {
      id: doc,
      rel_path: `d/${d}.md`,
      content_sha256: `s${d}`,
      byte_size: 5_000,
      media_type: 'text/markdown',
      title: `Doc ${d}`,
      classification: { label: 'policy', in_taxonomy: true },
      op_id: opId,
    });
    push(referenceItems, {
      id: randomUUID(),
      url: `https://example.org/${d}`,
      title: `Ref ${d}`,
      content_sha256: `r${d}`,
      classification: null,
      fetched_at: new Date(),
      op_id: opId,
    });
    for (let i = 0; i < 10; i++) {
      const id = randomUUID();
      push(contentChunks, {
        id,
        source_document_id: doc,
        reference_item_id: null,
        idx: i,
        text: `${i} ${CHUNK_TEXT}`,
        char_start: i * 500,
        char_end: i * 500 + 500,
        op_id: opId,
      });
      embed('content_chunk', id);
    }
    for (let i = 0; i < 5; i++) {
      const qa = randomUUID();
      push(qaExtractions, {
        id: qa,
        source_document_id: doc,
        idx: i,
        question_text: `What is item ${i}?`,
        answer_text: `It is item ${i} of ${d}.`,
        metadata: {},
        op_id: opId,
      });
      embed('q_a_extraction', qa);
      const mention = randomUUID();
      push(entityMentions, {
        id: mention,
        source_document_id: doc,
        canonical_name: `Entity ${d}-${i}`,
        entity_type: 'organization',
        surface_form: `Entity ${i}`,
        confidence: 0.9,
        metadata: {},
        op_id: opId,
      });
      embed('entity_mention', mention);
      if (i < 3)
        push(entityRelationships, {
          id: randomUUID(),
          source_document_id: doc,
          source_canonical: `Entity ${d}-${i}`,
          predicate: 'mentioned_with',
          target_canonical: `Entity ${d}-${i + 1}`,
          confidence: 0.7,
          metadata: {},
          op_id: opId,
        });
    }
  }
  return out;
}

async function writeInBatches(
  db: Database,
  spec: TableSpec,
  rows: readonly Row[],
  strategy: UpsertStrategy,
): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    const batch = rows.slice(i, i + BATCH);
    await db.transaction((tx) => upsertRows(tx, spec, batch, strategy));
  }
}

/** The raw limits: COPY of the same rows into an empty unlogged table with no keys or indexes. */
async function rawLimits(
  db: Database,
  spec: TableSpec,
  rows: readonly Row[],
): Promise<{ text: number; binary: number }> {
  const raw = `bench_raw_${spec.name}`;
  const columns = spec.columns.map((c) => c.name);
  await db.exec(
    `DROP TABLE IF EXISTS ${raw}; CREATE UNLOGGED TABLE ${raw} AS SELECT ${columns.join(', ')} FROM ${spec.name} WITH NO DATA`,
  );
  const limit = async (format: 'text' | 'binary') => {
    const payloads: (string | Buffer)[] = [];
    for (let i = 0; i < rows.length; i += BATCH) payloads.push(copyPayload(spec, rows.slice(i, i + BATCH), format));
    const seconds: number[] = [];
    for (let r = 0; r < REPEAT; r++) {
      await db.exec(`DELETE FROM ${raw}`);
      seconds.push(
        await timed(async () => {
          for (const payload of payloads) await db.copyIn(raw, columns, payload);
        }),
      );
    }
    return rows.length / median(seconds);
  };
  const result = { text: await limit('text'), binary: await limit('binary') };
  await db.exec(`DROP TABLE ${raw}`);
  return result;
}

function limitRows(
  engine: string,
  part: Measurement['part'],
  table: string,
  n: number,
  limits: { text: number; binary: number },
): Measurement[] {
  const best = Math.max(limits.text, limits.binary);
  return (['text', 'binary'] as const).map((format) => ({
    engine,
    part,
    table,
    strategy: `raw COPY ${format}` as const,
    phase: 'limit' as const,
    rows: n,
    rowsPerSecond: limits[format],
    ratioToLimit: limits[format] / best,
  }));
}

async function measureShapes(db: Database, doc: string, op: string): Promise<Measurement[]> {
  const out: Measurement[] = [];
  const kinds: [TableSpec, Row[]][] = [
    [
      contentChunks,
      Array.from({ length: TEXT_ROWS }, (_, idx) => ({
        id: randomUUID(),
        source_document_id: doc,
        idx,
        text: `${idx} ${CHUNK_TEXT}`,
        char_start: 0,
        char_end: 500,
        op_id: op,
      })),
    ],
    [
      recordEmbeddings,
      Array.from({ length: VECTOR_ROWS }, (_, i) => ({
        owner_kind: 'content_chunk',
        owner_id: randomUUID(),
        model: 'text-embedding-3-large',
        embedding: vector(i),
        op_id: op,
      })),
    ],
  ];
  for (const [spec, rows] of kinds) {
    if (rows.length === 0) continue;
    const limits = await rawLimits(db, spec, rows);
    const best = Math.max(limits.text, limits.binary);
    out.push(...limitRows(db.kind, 'shapes', spec.name, rows.length, limits));
    for (const strategy of strategiesFor(db.kind)) {
      const inserts: number[] = [];
      const updates: number[] = [];
      for (let r = 0; r < REPEAT; r++) {
        // Emptied by TRUNCATE, not DELETE: the shapes write the same keys one after another,
        // and dead rows and index entries left behind would slow each shape for the next.
        await db.exec(`TRUNCATE ${spec.name}`);
        inserts.push(await timed(() => writeInBatches(db, spec, rows, strategy)));
        updates.push(await timed(() => writeInBatches(db, spec, rows, strategy)));
      }
      for (const [phase, secs] of [
        ['insert', inserts],
        ['update', updates],
      ] as const) {
        const perSecond = rows.length / median(secs);
        out.push({
          engine: db.kind,
          part: 'shapes',
          table: spec.name,
          strategy,
          phase,
          rows: rows.length,
          rowsPerSecond: perSecond,
          ratioToLimit: perSecond / best,
        });
      }
    }
    await db.exec(`DELETE FROM ${spec.name}`);
  }
  return out;
}

/** The real Sink, table by table in flush order, items of ten rows, fresh keys then the same keys. */
async function measureWriter(db: Database, op: string): Promise<Measurement[]> {
  const out: Measurement[] = [];
  const rowsByTable = walkRows(DOCS, op);
  for (const spec of WALK_TABLES) {
    const rows = rowsByTable.get(spec)!;
    const limits = await rawLimits(db, spec, rows);
    const best = Math.max(limits.text, limits.binary);
    out.push(...limitRows(db.kind, 'writer', spec.name, rows.length, limits));
    for (const phase of ['insert', 'update'] as const) {
      const sink = new Sink(db, { batchRows: BATCH, flushMs: 50 });
      const seconds = await timed(async () => {
        const writes = [];
        for (let i = 0; i < rows.length; i += 10) writes.push(sink.write(tableRows(spec, rows.slice(i, i + 10))));
        await sink.close();
        await Promise.all(writes);
      });
      const perSecond = rows.length / seconds;
      out.push({
        engine: db.kind,
        part: 'writer',
        table: spec.name,
        strategy: defaultStrategy(db.kind, spec),
        phase,
        rows: rows.length,
        rowsPerSecond: perSecond,
        ratioToLimit: perSecond / best,
      });
    }
  }
  return out;
}

async function measureEngine(): Promise<Measurement[]> {
  const scratch = await openTestDatabase();
  const { db } = scratch;
  try {
    const op = randomUUID();
    const doc = randomUUID();
    await upsertRows(
      db,
      sourceDocuments,
      [
        {
          id: doc,
          rel_path: 'bench.md',
          content_sha256: 'x',
          byte_size: 1,
          media_type: 'text/markdown',
          title: null,
          classification: null,
          op_id: op,
        },
      ],
      'values',
    );
    return [...(await measureShapes(db, doc, op)), ...(await measureWriter(db, op))];
  } finally {
    await scratch.dispose();
  }
}

const results: Measurement[] = [];
// PGlite first, then PostgreSQL when a DSN names one.
const dsn = process.env.ENGINE_DB_DSN;
delete process.env.ENGINE_DB_DSN;
results.push(...(await measureEngine()));
if (dsn) {
  process.env.ENGINE_DB_DSN = dsn;
  results.push(...(await measureEngine()));
}
for (const part of ['shapes', 'writer'] as const) {
  console.log(
    part === 'shapes'
      ? '\nStatement shapes (batches in one transaction each):'
      : '\nThe sink, per table (its default shape):',
  );
  printTable(
    ['engine', 'table', 'strategy', 'phase', 'rows', 'rows/s', 'x limit'],
    results
      .filter((m) => m.part === part)
      .map((m) => [
        m.engine,
        m.table,
        m.strategy,
        m.phase,
        String(m.rows),
        rate(m.rowsPerSecond),
        m.ratioToLimit.toFixed(2),
      ]),
  );
}
// The sink's vector shape on each engine against the text-format multi-row INSERT it replaces.
const speedUps = [...new Set(results.map((m) => m.engine))].map((engine) => {
  const strategy = defaultStrategy(engine as Database['kind'], recordEmbeddings);
  const find = (shape: UpsertStrategy, phase: 'insert' | 'update') =>
    results.find(
      (m) =>
        m.engine === engine &&
        m.part === 'shapes' &&
        m.table === recordEmbeddings.name &&
        m.strategy === shape &&
        m.phase === phase,
    );
  const ratio = (phase: 'insert' | 'update') =>
    (find(strategy, phase)?.rowsPerSecond ?? NaN) / (find('values', phase)?.rowsPerSecond ?? NaN);
  return { engine, strategy, overValuesInsert: ratio('insert'), overValuesUpdate: ratio('update') };
});
for (const s of speedUps) {
  console.log(
    `${s.engine}: record_embeddings ${s.strategy} / values = ${s.overValuesInsert.toFixed(1)}x insert, ${s.overValuesUpdate.toFixed(1)}x update`,
  );
}
console.log(
  `\n${TEXT_ROWS} text rows, ${VECTOR_ROWS} vector rows, writer on ${DOCS} documents' rows, batches of ${BATCH}, median of ${REPEAT}; node ${process.version}`,
);
await writeJson(args.json, 'sink', {
  textRows: TEXT_ROWS,
  vectorRows: VECTOR_ROWS,
  docs: DOCS,
  batch: BATCH,
  repeat: REPEAT,
  speedUps,
  results,
});
