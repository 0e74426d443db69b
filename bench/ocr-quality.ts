// OCR's quality on pages of known text (issue 53, "Quality and speed"): letter pages at 300 dpi
// drawn with @napi-rs/canvas in fonts from npm font packages (@fontsource), at several sizes,
// clean and with noise and a slight rotation; single-column pages (character error rate, the
// reading order being defined), two-column and table pages (word recall, a bag of words: their
// reading order is not). Wrapped as image-only PDFs (single column), PNG (noisy) and TIFF
// (columns and tables) and read through the converter the walk uses. Two parts: a tuning part
// (Lato, Merriweather; seeds 1-99) and a held-out part made with other fonts and seeds (IBM Plex
// Serif, Inter; seeds 101-199). Nothing was tuned on either: the defaults are reported on both.
// --pages N draws N pages per font in each cell (kind of page, clean or noisy) of each part
// named by --parts: 2 N pages a cell.
//
//   node bench/ocr-quality.ts [--pages N] [--parts tuning,held-out] [--json FILE]

import { createCanvas, GlobalFonts, type Canvas } from '@napi-rs/canvas';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { pdfDocument, tiffOf, wordRecall } from './corpus/scans.ts';
import { printTable, writeJson } from './report.ts';
import { createConverter, type MediaType } from '../stages/convert/index.ts';
import { DEFAULT_OCR_OPTIONS } from '../stages/ocr/index.ts';

const { values: args } = parseArgs({
  options: {
    pages: { type: 'string', default: '1' },
    parts: { type: 'string', default: 'tuning,held-out' },
    json: { type: 'string' },
  },
});
const PAGES_PER_FONT = Number(args.pages);
const PARTS = args.parts.split(',');
const require = createRequire(import.meta.url);

const FONTS = {
  tuning: [
    ['Lato', '@fontsource/lato/files/lato-latin-400-normal.woff2'],
    ['Merriweather', '@fontsource/merriweather/files/merriweather-latin-400-normal.woff'],
  ],
  heldOut: [
    ['IBM Plex Serif', '@fontsource/ibm-plex-serif/files/ibm-plex-serif-latin-400-normal.woff2'],
    ['Inter', '@fontsource/inter/files/inter-latin-400-normal.woff2'],
  ],
} as const;
for (const [family, file] of [...FONTS.tuning, ...FONTS.heldOut])
  GlobalFonts.registerFromPath(require.resolve(file), family);

const WORDS = (
  'the supplier shall deliver goods within thirty days of order payment is due on receipt of invoice ' +
  'late payments carry interest at four percent warranty covers defects for twelve months notice must be ' +
  'given in writing to the registered office Acme Logistics Northwind Traders Lyon Hamburg March April ' +
  'insurance liability clause schedule annex agreement termination signed witness quantity price'
).split(' ');

function random(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

/** Lines of words with numbers and punctuation, each at most `chars` long. */
function textLines(count: number, chars: number, next: () => number): string[] {
  return Array.from({ length: count }, () => {
    const words: string[] = [];
    for (;;) {
      const r = next();
      const word = r < 0.08 ? String(Math.floor(next() * 9000) + 100) : WORDS[Math.floor(next() * WORDS.length)]!;
      const punctuated = r > 0.93 ? `${word},` : r > 0.9 ? `${word}.` : word;
      if ([...words, punctuated].join(' ').length > chars) break;
      words.push(punctuated);
    }
    return words.join(' ');
  });
}

const WIDTH = 2550;
const HEIGHT = 3300;
type Kind = 'single' | 'two_column' | 'table';

interface Page {
  kind: Kind;
  noisy: boolean;
  canvas: Canvas;
  /** The text as read in order (single column), or its words (columns, tables). */
  truth: string;
}

function drawPage(kind: Kind, family: string, px: number, noisy: boolean, seed: number): Page {
  const next = random(seed);
  const canvas = createCanvas(WIDTH, HEIGHT);
  const g = canvas.getContext('2d');
  g.fillStyle = 'white';
  g.fillRect(0, 0, WIDTH, HEIGHT);
  if (noisy) {
    g.translate(WIDTH / 2, HEIGHT / 2);
    g.rotate(((next() * 3 - 1.5) * Math.PI) / 180);
    g.translate(-WIDTH / 2, -HEIGHT / 2);
  }
  g.fillStyle = 'black';
  g.font = `${px}px "${family}"`;
  const lead = Math.round(px * 1.5);
  const rows = Math.floor((HEIGHT - 400) / lead);
  const truth: string[] = [];
  if (kind === 'single') {
    const lines = textLines(Math.min(rows, 30), Math.floor(1800 / (px * 0.5)), next);
    lines.forEach((line, i) => g.fillText(line, 200, 250 + i * lead));
    truth.push(...lines);
  } else if (kind === 'two_column') {
    for (const x of [200, 1350]) {
      const lines = textLines(Math.min(rows, 30), Math.floor(950 / (px * 0.5)), next);
      lines.forEach((line, i) => g.fillText(line, x, 250 + i * lead));
      truth.push(...lines);
    }
  } else {
    const columns = [200, 900, 1500, 1950];
    g.lineWidth = 3;
    for (let row = 0; row < Math.min(rows, 20); row++) {
      const y = 250 + row * lead;
      g.beginPath();
      g.moveTo(180, y - px);
      g.lineTo(2350, y - px);
      g.stroke();
      const cells = [
        textLines(1, 28, next)[0]!,
        textLines(1, 20, next)[0]!,
        String(Math.floor(next() * 90000)),
        `${Math.floor(next() * 100)}.${Math.floor(next() * 90) + 10}`,
      ];
      cells.forEach((cell, c) => g.fillText(cell, columns[c]!, y));
      truth.push(...cells);
    }
  }
  if (noisy) {
    const image = g.getImageData(0, 0, WIDTH, HEIGHT);
    for (let i = 0; i < image.data.length; i += 4) {
      const r = next();
      if (r < 0.01) image.data.fill(r < 0.005 ? 0 : 255, i, i + 3);
    }
    g.resetTransform();
    g.putImageData(image, 0, 0);
  }
  return { kind, noisy, canvas, truth: truth.join('\n') };
}

/** Edit distance over characters, whitespace runs made one space. */
function cer(truth: string, read: string): number {
  const a = [...truth.replace(/\s+/g, ' ').trim()];
  const b = [...read.replace(/\s+/g, ' ').trim()];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]! / Math.max(1, a.length);
}

const converter = createConverter({ ocr: { ...DEFAULT_OCR_OPTIONS, workers: 1 } });

/** The page as a document of the type its kind is wrapped as, read by the converter. */
async function read(page: Page): Promise<string> {
  let bytes: Buffer;
  let mediaType: MediaType;
  if (page.kind === 'single' && !page.noisy) {
    const png = page.canvas.toBuffer('image/png');
    bytes = await pdfDocument((doc) => {
      doc.addPage({ size: [612, 792], margin: 0 });
      doc.image(png, 0, 0, { width: 612, height: 792 });
    });
    mediaType = 'application/pdf';
  } else if (page.kind === 'single') {
    bytes = page.canvas.toBuffer('image/png');
    mediaType = 'image/png';
  } else {
    bytes = tiffOf([page.canvas]);
    mediaType = 'image/tiff';
  }
  return (await converter.convert(bytes, mediaType)).text;
}

const SIZES = [40, 54]; // 9.6 pt and 13 pt at 300 dpi
const rows: Record<string, Record<string, number[]>> = {};
try {
  for (const [part, fonts, seedBase] of [
    ['tuning', FONTS.tuning, 1],
    ['held-out', FONTS.heldOut, 101],
  ] as const) {
    if (!PARTS.includes(part)) continue;
    let seed = seedBase;
    for (const [family] of fonts) {
      for (let n = 0; n < PAGES_PER_FONT; n++) {
        for (const [kind, noisy] of [
          ['single', false],
          ['single', true],
          ['two_column', false],
          ['table', true],
        ] as const) {
          const px = SIZES[seed % SIZES.length]!;
          const page = drawPage(kind, family, px, noisy, seed++);
          const text = await read(page);
          const key = `${kind}${noisy ? ' noisy, rotated' : ' clean'}`;
          const score = kind === 'single' ? cer(page.truth, text) : wordRecall(page.truth, text);
          ((rows[part] ??= {})[key] ??= []).push(score);
        }
      }
    }
  }
} finally {
  await converter.close();
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
/** The worst page of a cell: the highest error rate, the lowest recall. */
const worst = (key: string, xs: readonly number[]) => (key.startsWith('single') ? Math.max(...xs) : Math.min(...xs));
const results = Object.fromEntries(
  Object.entries(rows).map(([part, byKey]) => [
    part,
    Object.fromEntries(
      Object.entries(byKey).map(([key, scores]) => [
        key,
        { mean: Number(mean(scores).toFixed(4)), worst: Number(worst(key, scores).toFixed(4)), pages: scores.length },
      ]),
    ),
  ]),
);
const shown = (key: string, value: number) =>
  key.startsWith('single') ? `${(value * 100).toFixed(2)} %` : value.toFixed(3);
printTable(
  ['part', 'pages', 'measure', 'n', 'mean', 'worst page'],
  Object.entries(results).flatMap(([part, byKey]) =>
    Object.entries(byKey).map(([key, { mean, worst, pages }]) => [
      part,
      key,
      key.startsWith('single') ? 'CER' : 'word recall',
      String(pages),
      shown(key, mean),
      shown(key, worst),
    ]),
  ),
);
await writeJson(args.json, 'ocr-quality', results);
