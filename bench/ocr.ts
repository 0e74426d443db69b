// OCR's cost on this machine (docs/DECISIONS.md "Scanned documents read"): a few dense letter
// pages at 300 dpi (time a page, the OCR child's peak memory, word recall against the drawn
// text) and a long scan of small pages (the child's memory early and late in the document: it
// must stay flat, the worker being reused page after page), the child's peak in each tenth of
// its pages. One OCR child, as a walk with INGEST_OCR_WORKERS=1 runs it (the default on 2 cores).
// --long-letter makes the long scan's pages letter pages at 300 dpi of --lines lines of type
// (a 200-page scan of moderate density within the default limits).
//
//   node bench/ocr.ts [--dense N] [--long N] [--long-letter] [--lines N] [--json FILE]

import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { LETTER_PAGE, makeImagePdf, wordRecall } from './corpus/scans.ts';
import { printTable, writeJson } from './report.ts';
import { createConverter } from '../stages/convert/index.ts';
import { DEFAULT_OCR_OPTIONS } from '../stages/ocr/index.ts';

const { values: args } = parseArgs({
  options: {
    dense: { type: 'string', default: '2' },
    long: { type: 'string', default: '100' },
    'long-letter': { type: 'boolean', default: false },
    lines: { type: 'string', default: '25' },
    json: { type: 'string' },
  },
});

const WORDS =
  'contract supplier delivery invoice payment warranty clause party agreement schedule annex price ' +
  'quantity period notice termination liability insurance signature witness dated registered office';
const vocabulary = WORDS.split(' ');

/** Seeded lines of words, about `chars` long each. */
function lines(count: number, chars: number, seed: number): string[] {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31);
  return Array.from({ length: count }, () => {
    const words: string[] = [];
    while (words.join(' ').length < chars) words.push(vocabulary[next() % vocabulary.length]!);
    return words.join(' ');
  });
}

/** This process's OCR child's resident memory, sampled while `work` runs: [ms since start, MB][]. */
async function sampled(work: () => Promise<unknown>): Promise<{ ms: number; samples: [number, number][] }> {
  const samples: [number, number][] = [];
  const started = Date.now();
  const timer = setInterval(() => {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('stages/ocr/child.ts')) continue;
        // This run's child only: another run's beside it is not ours to count.
        if (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] !== String(process.pid)) continue;
        const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        if (kb !== undefined) samples.push([Date.now() - started, Number(kb) / 1024]);
      } catch {
        // The child ended between the listing and the read.
      }
    }
  }, 100);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return { ms: Date.now() - started, samples };
}

const peak = (samples: readonly [number, number][]) => Math.round(Math.max(0, ...samples.map(([, mb]) => mb)));

const converter = createConverter({ ocr: { ...DEFAULT_OCR_OPTIONS, workers: 1 } });
try {
  // The child and its models are loaded before anything is timed.
  await converter.convert(await makeImagePdf([{ lines: ['warm up the engine once'] }]), 'application/pdf');

  const denseCount = Number(args.dense);
  const densePages = Array.from({ length: denseCount }, (_, i) => lines(50, 80, i + 1));
  const dense = await makeImagePdf(
    densePages.map((l) => ({ lines: l })),
    LETTER_PAGE,
  );
  let denseText = '';
  const denseRun = await sampled(async () => {
    denseText = (await converter.convert(dense, 'application/pdf')).text;
  });

  const longCount = Number(args.long);
  const letter = args['long-letter'];
  const longPages = Array.from({ length: longCount }, (_, i) =>
    letter ? lines(Number(args.lines), 70, 1000 + i) : lines(4, 36, 1000 + i),
  );
  const long = await makeImagePdf(
    longPages.map((l) => ({ lines: l })),
    letter ? LETTER_PAGE : undefined,
  );
  let longText = '';
  const longRun = await sampled(async () => {
    longText = (await converter.convert(long, 'application/pdf')).text;
  });
  const tenth = longRun.ms / 10;
  // The child's peak in each tenth of the run (pages are read at an even pace).
  const tenths = Array.from({ length: 10 }, (_, t) =>
    peak(longRun.samples.filter(([ms]) => ms >= t * tenth && ms <= (t + 1) * tenth)),
  );

  const results = {
    dense: {
      pages: denseCount,
      secondsPerPage: Number((denseRun.ms / 1000 / denseCount).toFixed(1)),
      peakChildMb: peak(denseRun.samples),
      wordRecall: Number(wordRecall(densePages.flat().join(' '), denseText).toFixed(4)),
    },
    long: {
      pages: longCount,
      secondsPerPage: Number((longRun.ms / 1000 / longCount).toFixed(2)),
      pagesPerSecondPerCore: Number((longCount / (longRun.ms / 1000)).toFixed(2)),
      letterPages: letter,
      peakChildMbFirstTenth: tenths[0]!,
      peakChildMbLastTenth: tenths[9]!,
      peakChildMbPerTenth: tenths,
      peakChildMb: peak(longRun.samples),
      wordRecall: Number(wordRecall(longPages.flat().join(' '), longText).toFixed(4)),
    },
  };
  printTable(
    ['run', 'pages', 's/page', 'child peak MB', 'other'],
    [
      [
        'dense letter, 300 dpi',
        String(denseCount),
        String(results.dense.secondsPerPage),
        String(results.dense.peakChildMb),
        `word recall ${results.dense.wordRecall}`,
      ],
      [
        letter ? `long scan, letter pages of ${args.lines} lines at 300 dpi` : 'long scan, small pages',
        String(longCount),
        String(results.long.secondsPerPage),
        `${tenths.join(' / ')} (each tenth)`,
        `${results.long.pagesPerSecondPerCore} pages/s on one child, word recall ${results.long.wordRecall}`,
      ],
    ],
  );
  await writeJson(args.json, 'ocr', results);
} finally {
  await converter.close();
}
