// Scans in a walk's mix (issue 53, "Bounded and isolated"): the same generated corpus walked cold
// without scans and with them (a tenth of its files image-only PDFs of letter pages at 300 dpi),
// each on a fresh database against a mock model server with latency L and model concurrency C,
// with the default OCR children (INGEST_OCR_WORKERS: half the cores). What it says of each walk:
// its time, the OCR pages and their time, and the non-OCR items' Little's-law fraction: the
// model calls the corpus's items make without scans, over the time the same items took in
// this walk (from its start to the last of them done), against the bound C / L. The scans' own
// calls are left out of it, so 0.9 means the other items kept the model pipe as full as alone.
//
//   node bench/ocr-walk.ts [--docs N] [--scan-share F] [--scan-pages P] [--lines N]
//                          [--latency-ms L] [--concurrency C] [--engines E,...] [--json FILE]
//
// --docs is the corpus without its scans; the scans are F of the corpus with them.

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { openLifespan } from '../engine/lifespan.ts';
import { walk } from '../engine/walk/walk.ts';
import { loadConfig } from '../lib/config.ts';
import { LETTER_PAGE, makeImagePdf } from './corpus/scans.ts';
import { corpusFiles } from './corpus/render.ts';
import { DEFAULT_MIX, parseMix } from './corpus/generate.ts';
import { enginesToRun, WALKS_ONLY } from './engines.ts';
import { startMockProcess, type MockProcess } from './mock-process.ts';
import { mockTierEnv } from './mock-tier.ts';
import { printTable, writeJson } from './report.ts';
import { openTestDatabase } from './scratch-database.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '270' },
    'scan-share': { type: 'string', default: '0.1' },
    'scan-pages': { type: 'string', default: '1' },
    lines: { type: 'string', default: '25' },
    'latency-ms': { type: 'string', default: '400' },
    concurrency: { type: 'string', default: '8' },
    seed: { type: 'string', default: '1' },
    engines: { type: 'string' },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const SHARE = Number(args['scan-share']);
const SCANS = Math.round((DOCS * SHARE) / (1 - SHARE));
const LATENCY_MS = Number(args['latency-ms']);
const CONCURRENCY = Number(args.concurrency);
const BOUND = CONCURRENCY / (LATENCY_MS / 1000);

const WORDS = (
  'tender supplier delivery invoice payment warranty clause party agreement schedule annex price ' +
  'quantity period notice termination liability insurance signature witness dated office'
).split(' ');

/** Seeded lines of words for a scanned page, about 70 characters each. */
function scanLines(count: number, seed: number): string[] {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31);
  return Array.from({ length: count }, () => {
    const line: string[] = [];
    while (line.join(' ').length < 70) line.push(WORDS[next() % WORDS.length]!);
    return line.join(' ');
  });
}

/** The corpus under `dir`; with scans, one after every (1 - F) / F of its files, beside them. */
async function writeCorpus(dir: string, withScans: boolean): Promise<Set<string>> {
  const scans = new Set<string>();
  const every = DOCS / Math.max(1, SCANS);
  let index = 0;
  for await (const file of corpusFiles({ docs: DOCS, mix: parseMix(DEFAULT_MIX), seed: Number(args.seed) })) {
    await mkdir(path.dirname(path.join(dir, file.relPath)), { recursive: true });
    await writeFile(path.join(dir, file.relPath), file.bytes);
    if (withScans && scans.size < SCANS && index >= scans.size * every) {
      // Named after the file it follows, so that the listing meets it there.
      const relPath = `${file.relPath.replace(/\.\w+$/, '')}-scan.pdf`;
      const pages = Array.from({ length: Number(args['scan-pages']) }, (_, p) => ({
        lines: scanLines(Number(args.lines), 7919 * (scans.size + 1) + p),
      }));
      await writeFile(path.join(dir, relPath), await makeImagePdf(pages, LETTER_PAGE));
      scans.add(relPath);
    }
    index += 1;
  }
  return scans;
}

interface WalkResult {
  seconds: number;
  /** From the walk's start to the last non-scan item done. */
  otherItemsSeconds: number;
  /** Model calls by then (the scans' included, when they made some by then). */
  callsByThen: number;
  ocrPages: number;
  ocrSeconds: number;
  changed: number;
  failed: number;
}

/** One cold walk of `corpus` on a fresh database of `engine`. */
async function coldWalk(engine: string, corpus: string, scans: Set<string>, mock: MockProcess): Promise<WalkResult> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-ocr-walk-'));
  const scratch = engine === 'postgres' ? await openTestDatabase() : null;
  const config = loadConfig(
    {
      INGEST_DATA_DIR: root,
      INGEST_LOG_LEVEL: 'silent',
      INGEST_MODEL_CONCURRENCY: String(CONCURRENCY),
      ...WALKS_ONLY,
      ...(scratch === null ? {} : { ENGINE_DB_DSN: process.env.ENGINE_DB_DSN! }),
    },
    root,
  );
  const lifespan = await openLifespan(config, pino({ level: 'silent' }), scratch === null ? {} : { db: scratch.db });
  try {
    const callsBefore = await mock.calls();
    const others = DOCS;
    let othersDone = 0;
    let othersAt = 0;
    let callsAt: Promise<number> = Promise.resolve(0);
    const started = performance.now();
    const summary = await walk(lifespan, {
      sourcePath: corpus,
      onProgress: ({ finished }) => {
        if (finished === undefined || scans.has(finished)) return;
        othersDone += 1;
        if (othersDone === others) {
          othersAt = performance.now() - started;
          callsAt = mock.calls();
        }
      },
    });
    if (summary.status !== 'completed') throw new Error(`walk failed: ${summary.error}`);
    return {
      seconds: summary.durationMs / 1000,
      otherItemsSeconds: othersAt / 1000,
      callsByThen: (await callsAt) - callsBefore,
      ocrPages: summary.ocr.pages,
      ocrSeconds: summary.ocr.ms / 1000,
      changed: summary.items.changed,
      failed: summary.items.failed,
    };
  } finally {
    await lifespan.close();
    await scratch?.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

const scratch = mkdtempSync(path.join(tmpdir(), 'ingest-bench-ocr-corpus-'));
const mock = await startMockProcess(LATENCY_MS);
Object.assign(process.env, mockTierEnv(mock.url));
const results: { engine: string; plain: WalkResult; mixed: WalkResult }[] = [];
try {
  const plainCorpus = path.join(scratch, 'plain');
  const mixedCorpus = path.join(scratch, 'mixed');
  await writeCorpus(plainCorpus, false);
  const scans = await writeCorpus(mixedCorpus, true);
  for (const engine of enginesToRun('ocr-walk', args.engines)) {
    const plain = await coldWalk(engine, plainCorpus, new Set(), mock);
    const mixed = await coldWalk(engine, mixedCorpus, scans, mock);
    results.push({ engine, plain, mixed });
  }
} finally {
  await mock.close();
  rmSync(scratch, { recursive: true, force: true });
}

const fmt = (x: number, digits = 1) => x.toFixed(digits);
console.log(
  `\n${DOCS} documents, and ${SCANS} scans of ${args['scan-pages']} letter page(s) of ${args.lines} lines at 300 dpi ` +
    `beside them; L ${LATENCY_MS} ms, C ${CONCURRENCY} (bound ${fmt(BOUND)} calls/s):`,
);
printTable(
  ['engine', 'corpus', 'walk s', "other items' s", 'OCR pages / s', "other items' calls/s / bound"],
  results.flatMap(({ engine, plain, mixed }) =>
    [
      ['without scans', plain],
      ['with scans', mixed],
    ].map(([name, r]) => {
      const w = r as WalkResult;
      // The other items' calls are the walk without scans' calls by its last item.
      const fraction = plain.callsByThen / w.otherItemsSeconds / BOUND;
      return [
        engine,
        `${String(name)} (${w.changed} changed, ${w.failed} failed)`,
        fmt(w.seconds),
        fmt(w.otherItemsSeconds),
        `${w.ocrPages} / ${fmt(w.ocrSeconds)}`,
        `${fmt(plain.callsByThen / w.otherItemsSeconds)} / ${fmt(BOUND)} = ${fmt(fraction, 2)}`,
      ];
    }),
  ),
);
await writeJson(args.json, 'ocr-walk', {
  docs: DOCS,
  scans: SCANS,
  scanPages: Number(args['scan-pages']),
  lines: Number(args.lines),
  latencyMs: LATENCY_MS,
  concurrency: CONCURRENCY,
  results,
});
