// One large text file walked alone, per size and engine: the peak resident memory of the walk's
// process (and of PGlite's database process), the time, the chunks made and the sink
// transactions the item's rows took. The goal (issue 41 point 6): one item's working set flat
// whatever its size, under 400 MB for a 100 MB file.
//
//   node bench/large-item.ts [--mb 10,50,100] [--engines pglite,postgres] [--seed S] [--json FILE]
//
// Each walk runs in a child process of its own (with the V8 flags `ingest` runs with), against
// the mock model server in another process (bench/mock-process.ts), so that the mock's vectors
// and JSON are not counted as the walk's memory. The text is bench/corpus/large-text.ts's.

import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { WALK_V8_FLAGS } from '../lib/v8-flags.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { walk } from '../engine/walk/walk.ts';
import { openTestDatabase } from './scratch-database.ts';
import { largeTextParagraphs } from './corpus/large-text.ts';
import { mockTierEnv } from './mock-tier.ts';
import { startMockProcess } from './mock-process.ts';
import { databaseProcessPeakMb, memorySample } from './process-memory.ts';
import { enginesToRun, WALKS_ONLY } from './engines.ts';
import { printTable, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    mb: { type: 'string', default: '10,50,100' },
    seed: { type: 'string', default: '1' },
    engines: { type: 'string' },
    json: { type: 'string' },
    // Internal: the parent hands each child its engine, corpus and mock.
    engine: { type: 'string' },
    corpus: { type: 'string' },
    mock: { type: 'string' },
  },
});

interface WalkResult {
  engine: string;
  mb: number;
  seconds: number;
  status: string;
  failures: string[];
  chunks: number;
  rows: Record<string, number>;
  peakRssMb: number;
  /** The sample of the most resident memory, split: the process's own pages, and mapped files (the binary, the state store). */
  atPeak: { anon: number; file: number };
  databasePeakRssMb: number | null;
}

/** Writes `mb` MB of the deterministic text to `file`, a paragraph at a time. */
async function writeText(file: string, mb: number, seed: number): Promise<void> {
  const out = createWriteStream(file);
  let written = 0;
  for (const paragraph of largeTextParagraphs(seed)) {
    // Just under the size, so that 100 MB stays within the default INGEST_MAX_DOCUMENT_BYTES.
    const bytes = Buffer.byteLength(paragraph);
    if (written + bytes > mb * 2 ** 20) break;
    written += bytes;
    if (!out.write(paragraph)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** The child: one walk of the corpus on a fresh database, its figures as JSON on stdout. */
async function runWalk(engine: string, corpus: string, mockUrl: string): Promise<Omit<WalkResult, 'mb'>> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-large-'));
  // The model clients read their endpoint from the environment (this child's own).
  Object.assign(process.env, mockTierEnv(mockUrl));
  const config = loadConfig(
    {
      INGEST_DATA_DIR: root,
      INGEST_LOG_LEVEL: 'silent',
      ...WALKS_ONLY,
      ...(engine === 'postgres' ? { ENGINE_DB_DSN: process.env.ENGINE_DB_DSN! } : {}),
    },
    root,
  );
  const scratch: { db: Database; dispose(): Promise<void> } | null =
    engine === 'postgres' ? await openTestDatabase() : null;
  const lifespan = await openLifespan(config, pino({ level: 'silent' }), scratch === null ? {} : { db: scratch.db });
  try {
    let databasePeakRssMb: number | null = null;
    let atPeak = memorySample();
    const sampler = setInterval(() => {
      databasePeakRssMb = databaseProcessPeakMb() ?? databasePeakRssMb;
      const now = memorySample();
      if (now.anon + now.file > atPeak.anon + atPeak.file) atPeak = now;
    }, 500);
    const summary = await walk(lifespan, { sourcePath: corpus });
    clearInterval(sampler);
    databasePeakRssMb = databaseProcessPeakMb() ?? databasePeakRssMb;
    return {
      engine,
      seconds: summary.durationMs / 1000,
      status: summary.status,
      failures: summary.failures.map((f) => `${f.path} ${f.stage}:${f.code} ${f.message}`),
      chunks: summary.rows.content_chunks ?? 0,
      rows: summary.rows,
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      atPeak: { anon: atPeak.anon, file: atPeak.file },
      databasePeakRssMb,
    };
  } finally {
    await lifespan.close();
    await scratch?.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

function runChild(engine: string, corpus: string, mockUrl: string): Promise<Omit<WalkResult, 'mb'>> {
  const child = spawn(
    process.execPath,
    [...WALK_V8_FLAGS, import.meta.filename, '--engine', engine, '--corpus', corpus, '--mock', mockUrl],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) =>
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the ${engine} walk exited with ${code}`)),
    ),
  );
}

if (args.engine !== undefined) {
  process.stdout.write(JSON.stringify(await runWalk(args.engine, args.corpus!, args.mock!)));
} else {
  const engines = enginesToRun('large-item', args.engines);
  const sizes = args.mb.split(',').map(Number);
  const results: WalkResult[] = [];
  const mock = await startMockProcess(0);
  const scratch = mkdtempSync(path.join(tmpdir(), 'ingest-bench-large-corpus-'));
  try {
    for (const mb of sizes) {
      const corpus = path.join(scratch, String(mb));
      mkdirSync(corpus);
      await writeText(path.join(corpus, 'large.txt'), mb, Number(args.seed));
      for (const engine of engines) {
        const result = { mb, ...(await runChild(engine, corpus, mock.url)) };
        console.error(`${engine} ${mb} MB: ${result.seconds.toFixed(1)} s, peak ${result.peakRssMb} MB`);
        results.push(result);
      }
      rmSync(corpus, { recursive: true, force: true });
    }
  } finally {
    await mock.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  console.log(`\nOne text file walked alone (seed ${args.seed}), mock tier:`);
  printTable(
    [
      'engine',
      'MB',
      'status',
      'seconds',
      'chunks',
      'peak RSS MB (walk)',
      'anonymous / file-backed MB (walk, sampled peak)',
      'peak RSS MB (database process)',
    ],
    results.map((r) => [
      r.engine,
      String(r.mb),
      r.failures.length === 0 ? r.status : `${r.status}, ${r.failures[0]}`,
      r.seconds.toFixed(1),
      r.chunks.toLocaleString('en-US'),
      String(r.peakRssMb),
      `${r.atPeak.anon} / ${r.atPeak.file}`,
      r.databasePeakRssMb === null ? '-' : String(r.databasePeakRssMb),
    ]),
  );
  await writeJson(args.json, 'large-item', { seed: Number(args.seed), results });
}
