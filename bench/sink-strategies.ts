// Sink write strategies side by side: rows/s of each UPSERT statement shape on each database
// engine, for text rows (content_chunks) and vector rows (record_embeddings), on fresh keys
// (insert path) and on the same keys again (conflict/update path). Each figure is also given
// as a ratio to the raw limit measured in the same run: a plain COPY of the same rows into an
// empty unlogged table.
//
//   node bench/sink-strategies.ts [--rows N] [--vector-rows N] [--repeat N] [--json FILE]
//
// Runs on PGlite always, and on PostgreSQL too when ENGINE_DB_DSN is set
// (`bash scripts/pg-with-vector.sh node bench/sink-strategies.ts`).

import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Database } from '../lib/db/database.ts';
import { contentChunks, recordEmbeddings, sourceDocuments, type Row, type TableSpec } from '../lib/db/tables.ts';
import { upsertRows, UPSERT_STRATEGIES, type UpsertStrategy } from '../lib/db/upsert.ts';
import { openTestDatabase } from '../test/helpers/db.ts';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '20000' },
    'vector-rows': { type: 'string', default: '4000' },
    repeat: { type: 'string', default: '3' },
    batch: { type: 'string', default: '500' },
    json: { type: 'string' },
  },
});
const TEXT_ROWS = Number(args.rows);
const VECTOR_ROWS = Number(args['vector-rows']);
const REPEAT = Number(args.repeat);
const BATCH = Number(args.batch);

interface Measurement {
  engine: string;
  rows: string;
  strategy: UpsertStrategy | 'raw COPY (limit)';
  phase: 'insert' | 'update' | 'limit';
  rowsPerSecond: number;
  ratioToLimit: number;
}

const CHUNK_TEXT = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(9);

function textRows(documentId: string, n: number, opId: string): Row[] {
  return Array.from({ length: n }, (_, idx) => ({
    id: randomUUID(), source_document_id: documentId, idx, text: `${idx} ${CHUNK_TEXT}`, char_start: 0, char_end: 500, op_id: opId,
  }));
}

function vectorRows(n: number, opId: string): Row[] {
  return Array.from({ length: n }, (_, i) => {
    const embedding = new Float32Array(1024);
    for (let d = 0; d < 1024; d++) embedding[d] = Math.sin(i * 31 + d) / 32;
    return { owner_kind: 'content_chunk', owner_id: randomUUID(), model: 'text-embedding-3-large', embedding, op_id: opId };
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function writeInBatches(db: Database, spec: TableSpec, rows: Row[], strategy: UpsertStrategy): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    const batch = rows.slice(i, i + BATCH);
    await db.transaction((tx) => upsertRows(tx, spec, batch, strategy));
  }
}

/** The raw limit: COPY of the same rows into an empty unlogged table with no keys or indexes. */
async function rawCopySeconds(db: Database, spec: TableSpec, rows: Row[]): Promise<number> {
  const raw = `bench_raw_${spec.name}`;
  await db.exec(`DROP TABLE IF EXISTS ${raw}; CREATE UNLOGGED TABLE ${raw} AS SELECT ${spec.columns.map((c) => c.name).join(', ')} FROM ${spec.name} WITH NO DATA`);
  const lines = rows.map((row) =>
      spec.columns
        .map((c) => {
          const v = row[c.name];
          if (v === null || v === undefined) return '\\N';
          if (c.type === 'vector') return `[${Array.from(v as Float32Array).join(',')}]`;
          return String(v);
        })
        .join('\t'),
  );
  return timed(async () => {
    for (let i = 0; i < lines.length; i += BATCH) {
      await db.copyIn(raw, spec.columns.map((c) => c.name), `${lines.slice(i, i + BATCH).join('\n')}\n`);
    }
  });
}

async function measureEngine(): Promise<Measurement[]> {
  const out: Measurement[] = [];
  const scratch = await openTestDatabase();
  const { db } = scratch;
  try {
    const op = randomUUID();
    const doc = randomUUID();
    await upsertRows(db, sourceDocuments, [
      { id: doc, rel_path: 'bench.md', content_sha256: 'x', byte_size: 1, media_type: 'text/markdown', title: null, classification: null, op_id: op },
    ], 'values');
    const kinds: [string, TableSpec, (n: number) => Row[], number][] = [
      ['text (content_chunks)', contentChunks, (n) => textRows(doc, n, op), TEXT_ROWS],
      ['vector(1024) (record_embeddings)', recordEmbeddings, (n) => vectorRows(n, op), VECTOR_ROWS],
    ];
    for (const [label, spec, make, n] of kinds) {
      if (n === 0) continue;
      const rows = make(n);
      const limit = n / median(await repeat(() => rawCopySeconds(db, spec, rows)));
      out.push({ engine: db.engine, rows: label, strategy: 'raw COPY (limit)', phase: 'limit', rowsPerSecond: limit, ratioToLimit: 1 });
      for (const strategy of UPSERT_STRATEGIES) {
        const inserts: number[] = [];
        const updates: number[] = [];
        for (let r = 0; r < REPEAT; r++) {
          await db.exec(`DELETE FROM ${spec.name}`);
          inserts.push(await timed(() => writeInBatches(db, spec, rows, strategy)));
          updates.push(await timed(() => writeInBatches(db, spec, rows, strategy)));
        }
        for (const [phase, secs] of [['insert', inserts], ['update', updates]] as const) {
          const rate = n / median(secs);
          out.push({ engine: db.engine, rows: label, strategy, phase, rowsPerSecond: rate, ratioToLimit: rate / limit });
        }
      }
    }
  } finally {
    await scratch.dispose();
  }
  return out;
}

async function repeat(fn: () => Promise<number>): Promise<number[]> {
  const xs: number[] = [];
  for (let r = 0; r < REPEAT; r++) xs.push(await fn());
  return xs;
}

function printTable(rows: Measurement[]): void {
  const header = ['engine', 'rows', 'strategy', 'phase', 'rows/s', 'x limit'];
  const body = rows.map((m) => [m.engine, m.rows, m.strategy, m.phase, Math.round(m.rowsPerSecond).toLocaleString('en-US'), m.ratioToLimit.toFixed(2)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of body) console.log(line(r));
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
printTable(results);
console.log(`\n${TEXT_ROWS} text rows, ${VECTOR_ROWS} vector rows, batches of ${BATCH}, median of ${REPEAT}; node ${process.version}`);
if (args.json) await writeFile(args.json, JSON.stringify({ when: new Date().toISOString(), results }, null, 2));
