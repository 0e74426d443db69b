// The producer (stages/producer/), offline on the mock tier: one cold walk of a markdown corpus
// (the generator's: entity names shared across documents, FAQ entries), the producer run after
// it, then a 1 % touch (every hundredth document edited), its walk and the producer run after
// that, then a producer run with nothing changed, per database engine.
//
//   cost     each run's time, and the model calls it made against the concepts it drafted
//            (goal: equal; a concept whose evidence did not change costs no call)
//   memory   this process's resident memory when each run began and its peak while it ran
//
//   node bench/producer.ts [--docs N] [--seed S] [--engines pglite,postgres] [--json FILE]
//
// The walks run with the producer's chaining off, so each run is started and timed here, as
// `ingest produce` starts one; the mock model server runs in this process, as tier 1 does.

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Lifespan } from '../engine/lifespan.ts';
import { walk } from '../engine/walk/walk.ts';
import type { ProducerReport } from '../stages/producer/index.ts';
import { startMockTier, type MockTier } from './mock-tier.ts';
import { buildDocument, relPathOf } from './corpus/generate.ts';
import { renderDocument } from './corpus/render.ts';
import { enginesToRun, openBenchLifespan, openEngine } from './engines.ts';
import { printTable, sampleResidentMemory, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '1' },
    engines: { type: 'string' },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const SEED = Number(args.seed);
const TOUCH_EVERY = 100;

interface ProducerRun {
  ms: number;
  calls: number;
  report: ProducerReport;
  rssMb: { before: number; peak: number };
}

interface EngineResult {
  engine: string;
  coldWalkMs: number;
  touchWalkMs: number;
  touched: number;
  cold: ProducerRun;
  touch: ProducerRun;
  unchanged: ProducerRun;
}

async function writeCorpus(dir: string): Promise<void> {
  for (let index = 0; index < DOCS; index++) {
    const relPath = relPathOf(index, 'md');
    await mkdir(path.dirname(path.join(dir, relPath)), { recursive: true });
    await writeFile(path.join(dir, relPath), await renderDocument(buildDocument(SEED, index, 'md')));
  }
}

async function timedRun(lifespan: Lifespan, tier: MockTier, what: string): Promise<ProducerRun> {
  const calls = tier.mock.stats.messages;
  const memory = sampleResidentMemory();
  const started = performance.now();
  const outcome = await lifespan.producer.start({ all: false, redraft: false }).done;
  const ms = performance.now() - started;
  const rssMb = memory.stop();
  if (outcome.report === undefined) throw new Error(`${what}: the producer run failed: ${outcome.error}`);
  console.error(`${what}: ${(ms / 1000).toFixed(1)} s, ${outcome.report.drafted} drafted`);
  return { ms, calls: tier.mock.stats.messages - calls, report: outcome.report, rssMb };
}

async function runEngine(engine: string, corpus: string, tier: MockTier): Promise<EngineResult> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-producer-'));
  const target = await openEngine(engine);
  let lifespan: Lifespan | undefined;
  try {
    lifespan = await openBenchLifespan(root, target.db);
    const walked = async (what: string) => {
      const summary = await walk(lifespan!, { sourcePath: corpus });
      if (summary.status !== 'completed')
        throw new Error(`${engine}: ${what} walk ${summary.status}: ${summary.error}`);
      console.error(`${engine}: ${what} walk ${(summary.durationMs / 1000).toFixed(1)} s`);
      return summary.durationMs;
    };
    const coldWalkMs = await walked('cold');
    const cold = await timedRun(lifespan, tier, `${engine}: after the cold walk`);
    let touched = 0;
    // Edited at the top, so the document's first chunk (its excerpts' usual source) changes.
    for (let index = 0; index < DOCS; index += TOUCH_EVERY) {
      const file = path.join(corpus, relPathOf(index, 'md'));
      const text = await readFile(file, 'utf8');
      const cut = text.indexOf('\n\n') + 2;
      await writeFile(file, `${text.slice(0, cut)}A line added by the touch, number ${index}.\n\n${text.slice(cut)}`);
      touched += 1;
    }
    const touchWalkMs = await walked('1 % touch');
    const touch = await timedRun(lifespan, tier, `${engine}: after the touch`);
    const unchanged = await timedRun(lifespan, tier, `${engine}: nothing changed`);
    return { engine, coldWalkMs, touchWalkMs, touched, cold, touch, unchanged };
  } finally {
    await lifespan?.close();
    await target.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

const s = (ms: number) => (ms / 1000).toFixed(ms < 10_000 ? 2 : 1);

function report(results: EngineResult[]): void {
  for (const r of results) {
    console.log(
      `\n${r.engine}: producer on ${DOCS} markdown documents (seed ${SEED}), mock tier; cold walk ${s(r.coldWalkMs)} s, ` +
        `touch walk (${r.touched} documents edited) ${s(r.touchWalkMs)} s`,
    );
    const row = (what: string, p: ProducerRun) => [
      what,
      s(p.ms),
      `${p.report.examined} / ${p.report.drafted} / ${p.report.removed}`,
      `${p.calls}`,
      p.calls === p.report.drafted ? 'yes' : 'NO',
      `${p.report.concepts}`,
      `${p.report.pages_rendered}`,
      `${p.report.files_written} / ${p.report.files_kept}`,
      `${p.rssMb.before} / ${p.rssMb.peak}`,
    ];
    printTable(
      [
        'producer run',
        's',
        'examined / drafted / removed',
        'model calls',
        'calls = drafted?',
        'concepts',
        'pages rendered',
        'files written / kept',
        'RSS MB start / peak',
      ],
      [row('after the cold walk', r.cold), row('after a 1 % touch', r.touch), row('nothing changed', r.unchanged)],
    );
  }
}

const engines = enginesToRun('producer', args.engines);
const corpus = mkdtempSync(path.join(tmpdir(), 'ingest-bench-producer-corpus-'));
const tier = await startMockTier();
const results: EngineResult[] = [];
try {
  for (const engine of engines) {
    // Each engine walks the corpus as generated: the touch edits it, so it is written afresh.
    rmSync(corpus, { recursive: true, force: true });
    await writeCorpus(corpus);
    results.push(await runEngine(engine, corpus, tier));
  }
} finally {
  await tier.stop();
  rmSync(corpus, { recursive: true, force: true });
}
report(results);
await writeJson(args.json, 'producer', { docs: DOCS, seed: SEED, results });
