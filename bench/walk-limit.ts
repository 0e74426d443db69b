// The cold walk against its limit: the sink alone landing the same rows on the same engine.
//
// For each engine: a cold walk of a synthetic corpus by `ingest walk --json`, a process of its
// own as an operator runs it, on a fresh database, against a mock model server in a process of
// its own (latency 0); the walk's rows/s are the rows its tables hold after it over its items'
// phase (the walk's time less its passes'). Then the same rows are read back, grouped by item
// (the document or reference item that owns them), the walk's tables emptied, and the rows
// written again through the Sink with the configuration's defaults, items kept in flight as the
// walk keeps them (twice INGEST_WALK_IN_FLIGHT): the sink's rows/s on those rows is the limit.
// Every vector is written whole by the sink, where the walk copied some inside the database.
// The walk process's CPU seconds per document come from /proc (Linux; blank elsewhere).
//
//   node bench/walk-limit.ts [--docs N] [--seed S] [--engines pglite,postgres] [--ingest DIR] [--json FILE]
//
// `--ingest DIR` walks with the checkout in DIR (its bin/ingest.ts), so that two versions of the
// walk are measured by one harness against one limit.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openPglite } from '../lib/db/pglite.ts';
import { Sink } from '../lib/db/sink.ts';
import { recordEmbeddings, WALK_TABLES, type Row, type TableRows, type TableSpec } from '../lib/db/tables.ts';
import { enginesToRun, openEngine, WALKS_ONLY } from './engines.ts';
import { startMockProcess } from './mock-process.ts';
import { printTable, rate, timed, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '400' },
    seed: { type: 'string', default: '1' },
    engines: { type: 'string' },
    ingest: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const INGEST = path.join(path.resolve(args.ingest), 'bin/ingest.ts');
const HERE = fileURLToPath(new URL('../bin/ingest.ts', import.meta.url));

interface EngineFigures {
  engine: string;
  rows: number;
  walkItemsSeconds: number;
  walkRowsPerSecond: number;
  walkDocsPerSecond: number;
  walkCpuMsPerDoc: number | null;
  sinkSeconds: number;
  sinkRowsPerSecond: number;
  ratio: number;
}

/** Runs `ingest` (of the checkout measured) to its end; resolves with its stdout and CPU seconds. */
async function ingest(
  bin: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ out: string; cpuS: number | null }> {
  // Run as a program, as an operator runs it: its first line starts Node with the checkout's
  // own V8 flags (lib/v8-flags.ts); `node bin/ingest.ts` would run without them.
  const child = spawn(bin, argv, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let cpuS: number | null = null;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  // Sampled until the process ends: its last reading is its CPU time to within the interval.
  const sampler = setInterval(() => (cpuS = processCpuSeconds(child.pid!) ?? cpuS), 100);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(sampler);
  if (code !== 0) throw new Error(`ingest ${argv[0]} exited with ${code}`);
  return { out, cpuS };
}

/** utime + stime of a live process, in seconds (Linux /proc); null where there is none. */
function processCpuSeconds(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** The walk's tables, read back whole, each row keyed to the item that owns it. */
async function rowsByItem(db: Database): Promise<{ items: TableRows[]; rows: number }> {
  const items = new Map<string, Map<TableSpec, Row[]>>();
  const ownerOf = new Map<string, string>();
  let rows = 0;
  for (const spec of WALK_TABLES) {
    const columns = spec.columns.map((c) => (c.type === 'vector' ? `"${c.name}"::text AS "${c.name}"` : `"${c.name}"`));
    const { rows: found } = await db.query<Record<string, unknown>>(`SELECT ${columns.join(', ')} FROM "${spec.name}"`);
    for (const row of found) {
      const item = itemOf(spec, row, ownerOf);
      if (spec !== recordEmbeddings) ownerOf.set(String(row.id), item);
      const table = items.get(item) ?? new Map<TableSpec, Row[]>();
      const list = table.get(spec) ?? [];
      list.push(spec === recordEmbeddings ? { ...row, embedding: JSON.parse(String(row.embedding)) } : row);
      table.set(spec, list);
      items.set(item, table);
      rows += 1;
    }
  }
  return { items: [...items.values()], rows };
}

function itemOf(spec: TableSpec, row: Record<string, unknown>, ownerOf: Map<string, string>): string {
  if (spec === recordEmbeddings) return ownerOf.get(String(row.owner_id)) ?? String(row.owner_id);
  const owner = row.source_document_id ?? row.reference_item_id;
  return owner === undefined || owner === null ? String(row.id) : String(owner);
}

/** Writes every item through one Sink, `inFlight` items at a time; resolves once all is durable. */
async function writeThroughSink(db: Database, items: readonly TableRows[], inFlight: number): Promise<void> {
  const config = loadConfig({}, tmpdir());
  const sink = new Sink(db, config.sink);
  let next = 0;
  const writer = async () => {
    while (next < items.length) await sink.write(items[next++]!);
  };
  await Promise.all(Array.from({ length: inFlight }, writer));
  await sink.close();
}

async function measure(engine: string, corpus: string, mockUrl: string): Promise<EngineFigures> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-walk-limit-'));
  const scratch = engine === 'postgres' ? await openEngine('postgres') : null;
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...WALKS_ONLY,
      INGEST_DATA_DIR: path.join(root, 'data'),
      INGEST_LOG_LEVEL: 'silent',
      ANTHROPIC_BASE_URL: mockUrl,
      ANTHROPIC_API_KEY: 'bench-mock',
      OPENAI_BASE_URL: `${mockUrl}/v1`,
      OPENAI_API_KEY: 'bench-mock',
    };
    if (scratch === null) delete env.ENGINE_DB_DSN;
    else env.ENGINE_DB_DSN = scratch.dsn!;
    const { out, cpuS } = await ingest(INGEST, ['walk', corpus, '--json'], env);
    const summary = JSON.parse(out) as {
      durationMs: number;
      passes: { durationMs: number }[];
      items: { changed: number };
    };
    const itemsSeconds = (summary.durationMs - summary.passes.reduce((ms, pass) => ms + pass.durationMs, 0)) / 1000;
    const db = scratch?.db ?? (await openPglite(path.join(root, 'data', 'pglite')));
    try {
      const { items, rows } = await rowsByItem(db);
      await db.exec(`TRUNCATE ${WALK_TABLES.map((spec) => `"${spec.name}"`).join(', ')} CASCADE`);
      const inFlight = 2 * loadConfig({}, tmpdir()).walk.inFlight;
      const sinkSeconds = await timed(() => writeThroughSink(db, items, inFlight));
      const walkRowsPerSecond = rows / itemsSeconds;
      const sinkRowsPerSecond = rows / sinkSeconds;
      return {
        engine,
        rows,
        walkItemsSeconds: itemsSeconds,
        walkRowsPerSecond,
        walkDocsPerSecond: summary.items.changed / itemsSeconds,
        walkCpuMsPerDoc: cpuS === null ? null : (1000 * cpuS) / summary.items.changed,
        sinkSeconds,
        sinkRowsPerSecond,
        ratio: walkRowsPerSecond / sinkRowsPerSecond,
      };
    } finally {
      if (scratch === null) await db.close();
    }
  } finally {
    await scratch?.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

const engines = enginesToRun('walk-limit', args.engines);
const work = mkdtempSync(path.join(tmpdir(), 'ingest-bench-walk-limit-corpus-'));
const corpus = path.join(work, 'corpus');
try {
  await ingest(HERE, ['bench', 'corpus', '--docs', String(DOCS), '--seed', args.seed, corpus], process.env);
  const mock = await startMockProcess(0);
  const results: EngineFigures[] = [];
  try {
    for (const engine of engines) results.push(await measure(engine, corpus, mock.url));
  } finally {
    await mock.close();
  }
  console.log(
    `\nCold walk of ${DOCS} documents (seed ${args.seed}) by ${path.dirname(path.dirname(INGEST))} against the sink alone on its rows:`,
  );
  printTable(
    [
      'engine',
      'rows',
      'walk items s',
      'walk docs/s',
      'walk rows/s',
      'walk CPU ms/doc',
      'sink alone s',
      'sink rows/s',
      'walk / sink',
    ],
    results.map((r) => [
      r.engine,
      rate(r.rows),
      r.walkItemsSeconds.toFixed(1),
      r.walkDocsPerSecond.toFixed(1),
      rate(r.walkRowsPerSecond),
      r.walkCpuMsPerDoc === null ? '-' : r.walkCpuMsPerDoc.toFixed(1),
      r.sinkSeconds.toFixed(1),
      rate(r.sinkRowsPerSecond),
      r.ratio.toFixed(2),
    ]),
  );
  await writeJson(args.json, 'walk-limit', { docs: DOCS, seed: args.seed, ingest: INGEST, results });
} finally {
  rmSync(work, { recursive: true, force: true });
}
