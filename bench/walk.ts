// Whole walks on the mock tier, per database engine, each engine in a child process of its
// own so that its peak RSS is its own, against a mock model server in a process of its own
// (bench/mock-process.ts), as a real model API would be:
//
//   cold     every document new, mock latency 0: docs/s, rows/s per table, model calls/s,
//            p50/p99 per stage, RSS sampled through the walk (at each quarter and the peak),
//            CPU ms per document of the walk's own process (not its converters' or PGlite's)
//   warm     the unchanged corpus again: ms per file (target <= 0.1), model calls and rows (0)
//   touched  1 % of the documents rewritten: only those re-run
//   little   a fresh cold walk with mock latency L and model concurrency C: model calls/s as
//            a fraction of the Little's-law bound C / L (target >= 0.9)
//
//   node bench/walk.ts [--docs N] [--mix M] [--seed S] [--latency-ms L]
//                      [--concurrency C] [--little-docs N] [--engines E,...] [--json FILE]
//                      [--cpu-prof DIR]   (V8 CPU and allocation profiles of each engine's cold walk)
//
// Engines: pglite, and postgres when ENGINE_DB_DSN is set (scripts/pg-with-vector.sh), unless
// --engines names some of them.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { WALK_V8_FLAGS } from '../lib/v8-flags.ts';
import { openLifespan, type Lifespan } from '../engine/lifespan.ts';
import { walk, type WalkSummary } from '../engine/walk/walk.ts';
import { openTestDatabase } from './scratch-database.ts';
import { buildDocument, DEFAULT_MIX, mixPattern, parseMix, relPathOf, type CorpusType } from './corpus/generate.ts';
import { startMockProcess, type MockProcess } from './mock-process.ts';
import { startCpuProfile } from './cpu-profile.ts';
import { databaseProcessPeakMb, memorySample, type MemorySample } from './process-memory.ts';
import { enginesToRun, WALKS_ONLY } from './engines.ts';
import { LogHistogram, printTable, rate, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '1000' },
    mix: { type: 'string', default: DEFAULT_MIX },
    seed: { type: 'string', default: '1' },
    // Internal: the parent hands each engine's child its corpora and the touched versions.
    corpus: { type: 'string' },
    'little-corpus': { type: 'string' },
    'touched-corpus': { type: 'string' },
    'latency-ms': { type: 'string', default: '400' },
    concurrency: { type: 'string', default: '8' },
    'little-docs': { type: 'string', default: '300' },
    engines: { type: 'string' },
    engine: { type: 'string' },
    json: { type: 'string' },
    // V8 CPU and allocation profiles of each engine's cold walk, written into this directory.
    'cpu-prof': { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const SEED = Number(args.seed);
const MIX = parseMix(args.mix);
const LATENCY_MS = Number(args['latency-ms']);
const CONCURRENCY = Number(args.concurrency);
const LITTLE_DOCS = Math.min(DOCS, Number(args['little-docs']));

interface PhaseResult {
  seconds: number;
  /** CPU seconds (user + system) of the walk's process during the walk; child processes (the converters, PGlite's database) not included. */
  cpuSeconds: number;
  /** The same up to the last document done (the items' phase); the rest is the passes'. Null if fewer than --docs finished. */
  itemsCpuSeconds: number | null;
  changed: number;
  unchanged: number;
  failed: number;
  modelCalls: number;
  rows: Record<string, number>;
  /** The first failures, "path stage:code": a failed item is retried by every later walk. */
  failures: string[];
  stages?: Record<string, { p50: number; p99: number; n: number }>;
  /** peakAtS: when the sampled peak was, from the walk's start; passesFromS: when its items' phase ended (roughly: the walk's time less its passes'). */
  rssMb?: { beforeWalk: number; quarters: number[]; peak: number; peakAtS: number; passesFromS: number };
  /** The same points split: anonymous (heap, WASM, buffers) and file-backed (mapped files: the state store) resident MB, and the JS heap in use. */
  memory?: MemorySample[];
  /** The same split at the sampled peak. */
  atPeak?: MemorySample;
}

interface EngineResult {
  engine: string;
  cold: PhaseResult;
  warm: PhaseResult;
  touched: PhaseResult & { touchedFiles: number };
  little: PhaseResult & { latencyMs: number; concurrency: number; docs: number; boundCallsPerSecond: number };
  stateStoreBytes: number;
  peakRssMb: number;
  /** The embedded database's own process (PGlite only; a PostgreSQL server is not ours to count). */
  databasePeakRssMb: number | null;
}

const rssMb = () => Math.round(process.memoryUsage.rss() / 2 ** 20);

/** Writes the first `docs` documents of the corpus under `dir` (streamed). */
async function writeCorpus(dir: string, docs: number): Promise<void> {
  const { corpusFiles } = await import('./corpus/render.ts');
  for await (const file of corpusFiles({ docs, mix: MIX, seed: SEED })) {
    await mkdir(path.dirname(path.join(dir, file.relPath)), { recursive: true });
    await writeFile(path.join(dir, file.relPath), file.bytes);
  }
}

/**
 * Writes under `dir` a new version (other content, same type and path) of every hundredth
 * document. The parent renders them, so that the document libraries never load in an engine's
 * process: its memory is the walk's alone, in every phase.
 */
async function writeTouchedVersions(dir: string): Promise<void> {
  const { renderDocument } = await import('./corpus/render.ts');
  for (const { index, type, relPath } of touchedDocuments()) {
    const target = path.join(dir, relPath);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, await renderDocument(buildDocument(SEED + 1, index, type)));
  }
}

/** Writes the touched versions over the corpus; returns how many. */
async function touchOnePercent(corpus: string, touchedVersions: string): Promise<number> {
  let touched = 0;
  for (const { relPath } of touchedDocuments()) {
    await copyFile(path.join(touchedVersions, relPath), path.join(corpus, relPath));
    touched += 1;
  }
  return touched;
}

/** The documents the touched phase rewrites: every hundredth. */
function* touchedDocuments(): Generator<{ index: number; type: CorpusType; relPath: string }> {
  const pattern = mixPattern(MIX);
  for (let index = 0; index < DOCS; index += 100) {
    const type = pattern[index % pattern.length]!;
    yield { index, type, relPath: relPathOf(index, type) };
  }
}

async function phase(lifespan: Lifespan, corpus: string, mock: MockProcess, detail: boolean): Promise<PhaseResult> {
  const callsBefore = await mock.calls();
  const stages = new Map<string, LogHistogram>();
  const quarters: number[] = [];
  const memory: MemorySample[] = [memorySample()];
  let peak = rssMb();
  const beforeWalk = peak;
  let atPeak = memory[0]!;
  const started = Date.now();
  let peakAtMs = 0;
  const sampler = setInterval(() => {
    const now = rssMb();
    if (now <= peak) return;
    peak = now;
    peakAtMs = Date.now() - started;
    if (detail) atPeak = memorySample();
  }, 100);
  const stopProfile =
    detail && args['cpu-prof'] !== undefined ? await startCpuProfile(args['cpu-prof'], `${args.engine}-cold`) : null;
  const cpuBefore = process.cpuUsage();
  const cpuSecondsSince = (start: NodeJS.CpuUsage) => {
    const { user, system } = process.cpuUsage(start);
    return (user + system) / 1e6;
  };
  let itemsCpuSeconds: number | null = null;
  const observeStage = (stage: string, ms: number) =>
    (stages.get(stage) ?? stages.set(stage, new LogHistogram()).get(stage)!).add(ms);
  let summary: WalkSummary;
  try {
    summary = await walk(lifespan, {
      sourcePath: corpus,
      ...(detail ? { observeStage } : {}),
      onProgress: ({ done }) => {
        // The last document done ends the items' phase; the flow's passes (stage 5 and the rest) follow.
        if (done === DOCS) itemsCpuSeconds = cpuSecondsSince(cpuBefore);
        if (detail && done % Math.max(1, Math.floor(DOCS / 4)) === 0) {
          quarters.push(rssMb());
          memory.push(memorySample());
        }
      },
    });
  } finally {
    clearInterval(sampler);
  }
  const cpuSeconds = cpuSecondsSince(cpuBefore);
  await stopProfile?.();
  if (summary.status !== 'completed') throw new Error(`walk failed: ${summary.error}`);
  return {
    seconds: summary.durationMs / 1000,
    cpuSeconds,
    itemsCpuSeconds,
    changed: summary.items.changed,
    unchanged: summary.items.unchanged,
    failed: summary.items.failed,
    modelCalls: (await mock.calls()) - callsBefore,
    rows: summary.rows,
    failures: summary.failures.slice(0, 5).map((f) => `${f.path} ${f.stage}:${f.code}`),
    ...(detail
      ? {
          stages: Object.fromEntries(
            [...stages].map(([name, h]) => [name, { p50: h.quantile(0.5), p99: h.quantile(0.99), n: h.count }]),
          ),
          rssMb: {
            beforeWalk,
            quarters,
            peak: Math.max(peak, rssMb()),
            peakAtS: peakAtMs / 1000,
            passesFromS: (summary.durationMs - summary.passes.reduce((ms, p) => ms + p.durationMs, 0)) / 1000,
          },
          memory,
          atPeak,
        }
      : {}),
  };
}

/** A lifespan on a fresh database: PGlite in its own data directory, PostgreSQL in a fresh schema. */
async function freshEngine(
  root: string,
  name: string,
  concurrency?: number,
): Promise<{ lifespan: Lifespan; dispose(): Promise<void> }> {
  const dsn = args.engine === 'postgres' ? process.env.ENGINE_DB_DSN : undefined;
  const config = loadConfig(
    {
      INGEST_DATA_DIR: path.join(root, name),
      INGEST_LOG_LEVEL: 'silent',
      ...WALKS_ONLY,
      ...(concurrency === undefined ? {} : { INGEST_MODEL_CONCURRENCY: String(concurrency) }),
      ...(dsn === undefined ? {} : { ENGINE_DB_DSN: dsn }),
    },
    root,
  );
  let scratch: { db: Database; dispose(): Promise<void> } | null = null;
  if (dsn !== undefined) scratch = await openTestDatabase();
  const lifespan = await openLifespan(config, pino({ level: 'silent' }), scratch === null ? {} : { db: scratch.db });
  return {
    lifespan,
    async dispose() {
      await lifespan.close();
      await scratch?.dispose();
    },
  };
}

/** Points the model clients at a mock model server (the environment is the only seam). */
function useMock(mock: MockProcess): void {
  Object.assign(process.env, {
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'bench-mock',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'bench-mock',
  });
}

async function runEngine(corpus: string, littleCorpus: string, touchedVersions: string): Promise<EngineResult> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-walk-'));
  try {
    const fast = await startMockProcess(0);
    let cold: PhaseResult,
      warm: PhaseResult,
      touched: PhaseResult,
      touchedFiles: number,
      stateStoreBytes: number,
      databasePeakRssMb: number | null;
    try {
      useMock(fast);
      const main = await freshEngine(root, 'main');
      try {
        cold = await phase(main.lifespan, corpus, fast, true);
        warm = await phase(main.lifespan, corpus, fast, false);
        touchedFiles = await touchOnePercent(corpus, touchedVersions);
        touched = await phase(main.lifespan, corpus, fast, false);
        stateStoreBytes = statSync(path.join(main.lifespan.config.stateStorePath, 'state.mdb')).blocks * 512;
        databasePeakRssMb = databaseProcessPeakMb();
      } finally {
        await main.dispose();
      }
    } finally {
      await fast.close();
    }
    // Little's law on a corpus of its own (the first LITTLE_DOCS documents), cold, under latency.
    const slowMock = await startMockProcess(LATENCY_MS);
    let little: PhaseResult;
    try {
      useMock(slowMock);
      const slow = await freshEngine(root, 'little', CONCURRENCY);
      try {
        little = await phase(slow.lifespan, littleCorpus, slowMock, false);
      } finally {
        await slow.dispose();
      }
    } finally {
      await slowMock.close();
    }
    return {
      engine: args.engine!,
      cold,
      warm,
      touched: { ...touched, touchedFiles },
      stateStoreBytes,
      little: {
        ...little,
        latencyMs: LATENCY_MS,
        concurrency: CONCURRENCY,
        docs: LITTLE_DOCS,
        boundCallsPerSecond: CONCURRENCY / (LATENCY_MS / 1000),
      },
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      databasePeakRssMb,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Runs this file for one engine in a child process and reads its result from stdout. */
function runChild(
  engine: string,
  corpus: string,
  littleCorpus: string,
  touchedVersions: string,
): Promise<EngineResult> {
  const forwarded = process.argv.slice(2).filter((a, i, all) => a !== '--json' && all[i - 1] !== '--json');
  // The walk runs with the V8 flags `ingest` itself runs with (lib/v8-flags.ts).
  const child = spawn(
    process.execPath,
    [
      ...WALK_V8_FLAGS,
      import.meta.filename,
      ...forwarded,
      '--engine',
      engine,
      '--corpus',
      corpus,
      '--little-corpus',
      littleCorpus,
      '--touched-corpus',
      touchedVersions,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) =>
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as EngineResult)
        : reject(new Error(`the ${engine} walk benchmark exited with ${code}`)),
    ),
  );
}

function report(results: EngineResult[]): void {
  const fmt = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
  const sumRows = (p: PhaseResult) => Object.values(p.rows).reduce((a, b) => a + b, 0);
  console.log(`\nWalks of ${DOCS} documents (mix ${args.mix}, seed ${SEED}), mock tier:`);
  printTable(
    [
      'engine',
      'cold docs/s',
      "cold CPU ms/doc (walk process): all (items' phase)",
      'cold calls/s',
      'warm ms/file',
      'warm calls / rows',
      'touched: re-run / calls / s',
      `Little (L ${LATENCY_MS} ms, C ${CONCURRENCY}): calls/s / bound`,
      'peak RSS MB (before walk)',
      'database process peak RSS MB',
      'state store MB',
    ],
    results.map((r) => [
      r.engine,
      fmt(r.cold.changed / r.cold.seconds),
      `${fmt((r.cold.cpuSeconds * 1000) / r.cold.changed)} (${fmt(((r.cold.itemsCpuSeconds ?? NaN) * 1000) / r.cold.changed)})`,
      fmt(r.cold.modelCalls / r.cold.seconds),
      fmt((r.warm.seconds * 1000) / DOCS, 3),
      `${r.warm.modelCalls} / ${sumRows(r.warm)}`,
      `${r.touched.changed} of ${r.touched.touchedFiles} / ${r.touched.modelCalls} / ${fmt(r.touched.seconds, 2)}`,
      `${fmt(r.little.modelCalls / r.little.seconds)} / ${fmt(r.little.boundCallsPerSecond)} = ${fmt(r.little.modelCalls / r.little.seconds / r.little.boundCallsPerSecond, 2)}`,
      `${r.peakRssMb} (${r.cold.rssMb!.beforeWalk})`,
      r.databasePeakRssMb === null ? '-' : String(r.databasePeakRssMb),
      fmt(r.stateStoreBytes / 2 ** 20),
    ]),
  );
  console.log('\nCold walk, rows/s per table:');
  const tables = [...new Set(results.flatMap((r) => Object.keys(r.cold.rows)))];
  printTable(
    ['engine', ...tables],
    results.map((r) => [r.engine, ...tables.map((t) => rate((r.cold.rows[t] ?? 0) / r.cold.seconds))]),
  );
  console.log('\nCold walk, per stage p50 / p99 ms (per item):');
  const stages = [...new Set(results.flatMap((r) => Object.keys(r.cold.stages ?? {})))];
  printTable(
    ['engine', ...stages],
    results.map((r) => [
      r.engine,
      ...stages.map((s) => {
        const x = r.cold.stages?.[s];
        return x ? `${fmt(x.p50, 2)} / ${fmt(x.p99, 2)}` : '-';
      }),
    ]),
  );
  console.log('\nRSS MB through the cold walk (before, at each quarter, peak):');
  printTable(
    ['engine', 'rss', 'peak at s (passes from s)'],
    results.map((r) => [
      r.engine,
      [r.cold.rssMb!.beforeWalk, ...r.cold.rssMb!.quarters, r.cold.rssMb!.peak].join(' / '),
      `${fmt(r.cold.rssMb!.peakAtS)} (${fmt(r.cold.rssMb!.passesFromS)})`,
    ]),
  );
  console.log(
    '\nThe same points (before, each quarter; then the peak), resident MB split: anonymous / file-backed (mapped files); the JS heap in use and held; ArrayBuffers (Buffers, typed arrays: off the heap):',
  );
  printTable(
    ['engine', 'anonymous', 'file-backed', 'heap used', 'heap held', 'array buffers'],
    results.map((r) => {
      const m = [...r.cold.memory!, r.cold.atPeak!];
      const column = (field: keyof MemorySample) => m.map((x) => x[field]).join(' / ');
      return [
        r.engine,
        column('anon'),
        column('file'),
        column('heapUsed'),
        column('heapTotal'),
        column('arrayBuffers'),
      ];
    }),
  );
  console.log(
    `\nnode ${process.version}; failed items in the cold walk: ${results.map((r) => `${r.engine} ${r.cold.failed} ${r.cold.failures.join(', ')}`).join('; ')}`,
  );
}

if (args.engine !== undefined) {
  process.stdout.write(JSON.stringify(await runEngine(args.corpus!, args['little-corpus']!, args['touched-corpus']!)));
} else {
  const engines = enginesToRun('walk', args.engines);
  const results: EngineResult[] = [];
  const scratch = mkdtempSync(path.join(tmpdir(), 'ingest-bench-corpus-'));
  try {
    const touchedVersions = path.join(scratch, 'touched');
    await writeTouchedVersions(touchedVersions);
    for (const engine of engines) {
      // Each engine walks its own copy: the touched phase rewrites files.
      const corpus = path.join(scratch, engine);
      const little = path.join(scratch, `${engine}-little`);
      await writeCorpus(corpus, DOCS);
      await writeCorpus(little, LITTLE_DOCS);
      results.push(await runChild(engine, corpus, little, touchedVersions));
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  report(results);
  await writeJson(args.json, 'walk', { docs: DOCS, mix: args.mix, seed: SEED, results });
}
