// Conversion throughput for PDF, DOCX and XLSX: the isolated child-process pool the walk uses
// (all documents handed to it at once) against a single-thread baseline (the same converter
// functions called one after another in this process), on corpus documents of each type.
// Reports documents/s, pages/s for PDF, and the pool's speed-up on this machine's cores.
//
//   node bench/convert.ts [--docs N] [--workers W] [--seed S] [--json FILE]

import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { buildDocument, type CorpusType } from './corpus/generate.ts';
import { renderDocument } from './corpus/render.ts';
import { createConverter, DEFAULT_CONVERTER_OPTIONS, mediaTypeFor, type Converted } from '../stages/convert/index.ts';
import { convertDocx } from '../stages/convert/docx.ts';
import { convertPdf } from '../stages/convert/pdf.ts';
import { convertXlsx } from '../stages/convert/xlsx.ts';
import { printTable, rate, timed, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '40' },
    workers: { type: 'string', default: String(availableParallelism()) },
    seed: { type: 'string', default: '1' },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const WORKERS = Number(args.workers);
const SEED = Number(args.seed);
const TYPES = ['pdf', 'docx', 'xlsx'] as const satisfies readonly CorpusType[];

const limits = {
  maxPages: DEFAULT_CONVERTER_OPTIONS.maxPages,
  maxCells: DEFAULT_CONVERTER_OPTIONS.maxCells,
  maxEntries: DEFAULT_CONVERTER_OPTIONS.maxZipEntries,
  maxInflatedBytes: DEFAULT_CONVERTER_OPTIONS.maxInflatedBytes,
};

function inThread(type: (typeof TYPES)[number], bytes: Buffer): Promise<Converted> {
  switch (type) {
    case 'pdf':
      return convertPdf(bytes, limits.maxPages);
    case 'docx':
      return convertDocx(bytes, limits);
    case 'xlsx':
      return convertXlsx(bytes, limits);
  }
}

interface Result {
  type: string;
  docs: number;
  pages: number;
  singleDocsPerSecond: number;
  poolDocsPerSecond: number;
  singlePagesPerSecond: number;
  poolPagesPerSecond: number;
  speedUp: number;
}

const results: Result[] = [];
for (const type of TYPES) {
  const documents = await Promise.all(
    Array.from({ length: DOCS }, (_, i) => renderDocument(buildDocument(SEED, i, type))),
  );
  const mediaType = mediaTypeFor(`x.${type}`)!;
  let pages = 0;
  // Warm both paths first (module loading, the children's start) so neither pays it in the timing.
  await inThread(type, documents[0]!);
  const converter = createConverter({ workers: WORKERS });
  try {
    await Promise.all(Array.from({ length: WORKERS }, () => converter.convert(documents[0]!, mediaType)));
    const single = await timed(async () => {
      for (const bytes of documents) pages += (await inThread(type, bytes)).pages ?? 0;
    });
    const pool = await timed(() => Promise.all(documents.map((bytes) => converter.convert(bytes, mediaType))));
    results.push({
      type,
      docs: DOCS,
      pages,
      singleDocsPerSecond: DOCS / single,
      poolDocsPerSecond: DOCS / pool,
      singlePagesPerSecond: pages / single,
      poolPagesPerSecond: pages / pool,
      speedUp: single / pool,
    });
  } finally {
    await converter.close();
  }
}

printTable(
  [
    'type',
    'documents',
    'pages',
    'single thread docs/s',
    `pool (${WORKERS}) docs/s`,
    'pages/s single / pool',
    'pool speed-up',
  ],
  results.map((r) => [
    r.type,
    String(r.docs),
    r.pages === 0 ? '-' : String(r.pages),
    rate(r.singleDocsPerSecond),
    rate(r.poolDocsPerSecond),
    r.pages === 0 ? '-' : `${rate(r.singlePagesPerSecond)} / ${rate(r.poolPagesPerSecond)}`,
    `${r.speedUp.toFixed(2)}x`,
  ]),
);
console.log(`\n${availableParallelism()} cores, ${WORKERS} converter children; node ${process.version}`);
await writeJson(args.json, 'convert', { docs: DOCS, workers: WORKERS, results });
