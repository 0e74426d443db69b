// Watch mode (engine/trigger/watch.ts) under random file operations (bench/watch-fuzz.ts): creates,
// edits, editors' atomic saves, renames of files and folders, deletes, `mkdir -p`, bulk copies,
// editor litter, in bursts. Per database engine:
//
//   correctness  documents missed (a file whose content has no live document) and phantom (a
//                document with derived rows whose content no file holds) once the watch
//                settles: goal 0 and 0
//   coalescing   walks against operations (goal: far fewer walks)
//   latency      save -> rows durable for probe saves, p50 and p99, with the quiet period
//
//   node bench/watch.ts [--ops N] [--seed S] [--quiet-ms Q] [--probe-every N] [--engines pglite,postgres] [--json FILE]
//
// The mock model server runs in this process, as tier 1 does.

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Lifespan } from '../engine/lifespan.ts';
import { sha256Hex } from '../lib/hash.ts';
import { startMockTier } from './mock-tier.ts';
import { enginesToRun, openBenchLifespan, openEngine } from './engines.ts';
import { printTable, writeJson } from './report.ts';
import { corpusDocuments, runWatchFuzz, type WatchFuzzResult } from './watch-fuzz.ts';

const { values: args } = parseArgs({
  options: {
    ops: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '1' },
    'quiet-ms': { type: 'string', default: '300' },
    'probe-every': { type: 'string', default: '50' },
    engines: { type: 'string' },
    json: { type: 'string' },
  },
});

interface EngineResult extends WatchFuzzResult {
  engine: string;
  documents: number;
  missed: number;
  phantom: number;
}

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

async function runEngine(engine: string): Promise<EngineResult> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-watch-'));
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  const target = await openEngine(engine);
  let lifespan: Lifespan | undefined;
  try {
    lifespan = await openBenchLifespan(root, target.db);
    const result = await runWatchFuzz({
      lifespan,
      corpus,
      ops: Number(args.ops),
      seed: Number(args.seed),
      quietMs: Number(args['quiet-ms']),
      probeEvery: Number(args['probe-every']),
    });
    const files = await corpusDocuments(corpus);
    const held = new Set(
      await Promise.all(files.map(async (rel) => sha256Hex(await readFile(path.join(corpus, rel))))),
    );
    // Live documents: those with derived rows (source_documents rows stay as provenance).
    const { rows } = await target.db.query<{ sha: string }>(
      'SELECT content_sha256 AS sha FROM source_documents d WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.source_document_id = d.id)',
    );
    const stored = new Set(rows.map((r) => r.sha));
    return {
      engine,
      ...result,
      documents: files.length,
      missed: [...held].filter((sha) => !stored.has(sha)).length,
      phantom: [...stored].filter((sha) => !held.has(sha)).length,
    };
  } finally {
    await lifespan?.close();
    await target.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

const tier = await startMockTier();
const results: EngineResult[] = [];
try {
  for (const engine of enginesToRun('watch', args.engines)) results.push(await runEngine(engine));
} finally {
  await tier.stop();
}
console.log(
  `\nwatch mode under ${args.ops} random file operations (seed ${args.seed}), quiet period ${args['quiet-ms']} ms`,
);
printTable(
  [
    'engine',
    'operations',
    'walks',
    'documents at the end',
    'missed',
    'phantom',
    'save -> durable p50 / p99 ms',
    'time s',
  ],
  results.map((r) => [
    r.engine,
    String(r.ops),
    String(r.walks),
    String(r.documents),
    String(r.missed),
    String(r.phantom),
    `${Math.round(percentile(r.latenciesMs, 0.5))} / ${Math.round(percentile(r.latenciesMs, 0.99))} (${r.latenciesMs.length} probes)`,
    (r.durationMs / 1000).toFixed(1),
  ]),
);
console.log(`operations by kind: ${JSON.stringify(results[0]?.counts)}`);
for (const r of results) for (const problem of r.problems) console.log(`${r.engine}: ${problem}`);
await writeJson(args.json, 'watch', { args, results });
if (results.some((r) => r.missed + r.phantom > 0)) process.exitCode = 1;
