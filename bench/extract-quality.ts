// The HTML cleaner against @mozilla/readability + linkedom, side by side in one run, on the
// article-extraction benchmark (real pages with human ground truth), scored with the
// benchmark's own metric module (4-word shingles, precision and recall averaged over pages).
// Then time and memory per MB of input on large synthetic pages (deep nesting, tag soup,
// a long article, a big table), each in a fresh child process so its peak memory is its own.
//
//   node bench/extract-quality.ts [--bench DIR] [--limit N] [--synthetic-mb N] [--worst N] [--json FILE]
//
// Targets (docs/DECISIONS.md "HTML cleaner"): F1 >= 0.97, and the cleaner's median ms per page
// at most a quarter of Readability's in the same run.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { cleanHtml } from '../stages/convert/html.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    bench: { type: 'string', default: path.resolve(ROOT, '..', 'shared', 'extract-bench') },
    limit: { type: 'string' },
    'synthetic-mb': { type: 'string', default: '20' },
    worst: { type: 'string', default: '0' },
    json: { type: 'string' },
    // Internal: one synthetic measurement in this (child) process.
    'synthetic-case': { type: 'string' },
  },
});

const F1_TARGET = 0.97;
const SPEED_TARGET = 0.25;
const WARMUP_PAGES = 3;

type Extractor = (html: string) => string;

const extractors: Record<string, Extractor> = {
  cleaner: (html) => cleanHtml(html).text,
  'readability+linkedom': (html) => {
    const { document } = parseHTML(html);
    return new Readability(document).parse()?.textContent ?? '';
  },
};

// ---- synthetic inputs -------------------------------------------------------------------------

/** Deterministic pseudo-random numbers, so every run sees the same tag soup. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PARAGRAPH =
  '<p>The committee met on Tuesday, and after a long debate it agreed to publish the figures next month. </p>';

const SYNTHETIC: Record<string, (bytes: number) => string> = {
  'nested divs': (bytes) => `${'<div>'.repeat(bytes / 11)}deep text${'</div>'.repeat(bytes / 11)}`,
  'nested, never closed': (bytes) => '<div><span class="x"><p>word '.repeat(bytes / 30),
  'unmatched end tags': (bytes) => `${'<div>'.repeat(bytes / 10)}${'</b>'.repeat(bytes / 8)}`,
  'tag soup': (bytes) => {
    const random = prng(7);
    const tags = ['div', 'p', 'span', 'a', 'li', 'ul', 'table', 'td', 'tr', 'b', 'section', 'nav', 'h2'];
    const parts: string[] = [];
    let size = 0;
    while (size < bytes) {
      const tag = tags[Math.floor(random() * tags.length)]!;
      const r = random();
      const part =
        r < 0.4
          ? `<${tag} class="c${Math.floor(r * 100)}">`
          : r < 0.7
            ? `</${tag}>`
            : r < 0.75
              ? '&amp;&#x41;&bogus;'
              : 'some words here ';
      parts.push(part);
      size += part.length;
    }
    return parts.join('');
  },
  'long article': (bytes) => {
    const chrome = '<header><nav><a href="/">Home</a> <a href="/news">News</a></nav></header>';
    return `<html><head><title>Long</title></head><body>${chrome}<article>${PARAGRAPH.repeat(bytes / PARAGRAPH.length)}</article><footer>(c)</footer></body></html>`;
  },
  'big table': (bytes) => {
    const row = '<tr><td>alpha</td><td>1,234</td><td><a href="/x">link</a></td><td>note text</td></tr>';
    return `<table>${row.repeat(bytes / row.length)}</table>`;
  },
};

function measureSyntheticHere(name: string, megabytes: number): void {
  // A little under the size, so page chrome added around the body stays within it.
  const html = SYNTHETIC[name]!(megabytes * 1024 * 1024 - 4096);
  const before = process.memoryUsage().rss;
  const started = performance.now();
  const result = cleanHtml(html);
  const ms = performance.now() - started;
  const peak = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(
    JSON.stringify({
      name,
      mb: html.length / 1024 / 1024,
      ms,
      peakMb: Math.max(0, peak - before) / 1024 / 1024,
      verdict: result.verdict,
      warnings: result.warnings,
      textChars: result.text.length,
    }),
  );
}

function measureSynthetic(megabytes: number) {
  const rows = [];
  for (const name of Object.keys(SYNTHETIC)) {
    const child = spawnSync(
      process.execPath,
      [import.meta.filename, '--synthetic-case', name, '--synthetic-mb', String(megabytes)],
      {
        encoding: 'utf8',
        timeout: 600_000,
      },
    );
    if (child.status !== 0) throw new Error(`synthetic case "${name}" failed: ${child.stderr || child.signal}`);
    rows.push(
      JSON.parse(child.stdout) as {
        name: string;
        mb: number;
        ms: number;
        peakMb: number;
        verdict: string;
        warnings: string[];
      },
    );
  }
  return rows;
}

// ---- the benchmark pages ----------------------------------------------------------------------

interface Metrics {
  f1: number;
  precision: number;
  recall: number;
  f1_std: number;
}
interface MetricModule {
  evaluate(
    truths: string[],
    preds: string[],
    options?: { nBootstrap?: number },
  ): {
    metrics: Metrics;
    perDoc: { f1: number }[];
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function measurePages() {
  const bench = path.resolve(args.bench);
  const metric = (await import(pathToFileURL(path.join(bench, 'lib', 'metric.mjs')).href)) as MetricModule;
  const truth = JSON.parse(readFileSync(path.join(bench, 'data', 'ground-truth.json'), 'utf8')) as Record<
    string,
    { articleBody?: string }
  >;
  const available = new Set(readdirSync(path.join(bench, 'data', 'html')));
  let ids = Object.keys(truth)
    .sort()
    .filter((id) => available.has(`${id}.html`));
  if (args.limit !== undefined) ids = ids.slice(0, Number(args.limit));
  const pages = ids.map((id) => readFileSync(path.join(bench, 'data', 'html', `${id}.html`), 'utf8'));

  const names = Object.keys(extractors);
  for (const html of pages.slice(0, WARMUP_PAGES)) for (const name of names) extractors[name]!(html);
  const outputs: Record<string, string[]> = Object.fromEntries(names.map((n) => [n, []]));
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  // Side by side: each page goes through both extractors before the next, so machine noise
  // falls on both alike.
  for (const html of pages) {
    for (const name of names) {
      const started = performance.now();
      let text = '';
      try {
        text = extractors[name]!(html);
      } catch {
        // A crash scores as an empty output.
      }
      times[name]!.push(performance.now() - started);
      outputs[name]!.push(text);
    }
  }
  const truths = ids.map((id) => truth[id]!.articleBody ?? '');
  const rows = names.map((name) => {
    const { metrics, perDoc } = metric.evaluate(truths, outputs[name]!, { nBootstrap: 200 });
    return { name, ...metrics, medianMs: median(times[name]!), perPageF1: perDoc.map((d) => d.f1) };
  });
  return { pages: ids.length, ids, rows };
}

// ---- main -------------------------------------------------------------------------------------

if (args['synthetic-case'] !== undefined) {
  measureSyntheticHere(args['synthetic-case'], Number(args['synthetic-mb']));
} else if (!existsSync(path.join(path.resolve(args.bench), 'data', 'ground-truth.json'))) {
  process.stderr.write(`extract-quality: no benchmark pages at ${path.resolve(args.bench)} (pass --bench DIR)\n`);
  process.exitCode = 2;
} else {
  const quality = await measurePages();
  const cleaner = quality.rows.find((r) => r.name === 'cleaner')!;
  const readability = quality.rows.find((r) => r.name === 'readability+linkedom')!;
  const ratio = cleaner.medianMs / readability.medianMs;
  console.log(
    `${quality.pages} pages from ${path.relative(process.cwd(), path.resolve(args.bench)) || '.'}; node ${process.version}\n`,
  );
  console.log('| extractor | F1 | P | R | median ms/page | ms ratio to Readability |');
  console.log('|---|---|---|---|---|---|');
  for (const row of quality.rows) {
    console.log(
      `| ${row.name} | ${row.f1.toFixed(3)} ± ${row.f1_std.toFixed(3)} | ${row.precision.toFixed(3)} | ${row.recall.toFixed(3)} | ${row.medianMs.toFixed(2)} | ${(row.medianMs / readability.medianMs).toFixed(3)} |`,
    );
  }
  const pass = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `\ntargets: F1 >= ${F1_TARGET} ${pass(cleaner.f1 >= F1_TARGET)}; ms ratio <= ${SPEED_TARGET} ${pass(ratio <= SPEED_TARGET)}`,
  );
  const worst = Number(args.worst);
  if (worst > 0) {
    const order = quality.ids.map((id, i) => ({
      id,
      f1: cleaner.perPageF1[i]!,
      readability: readability.perPageF1[i]!,
    }));
    order.sort((a, b) => a.f1 - b.f1);
    console.log('\nworst pages for the cleaner (F1, Readability F1):');
    for (const page of order.slice(0, worst))
      console.log(`  ${page.f1.toFixed(3)} ${page.readability.toFixed(3)} ${page.id}`);
  }

  const megabytes = Number(args['synthetic-mb']);
  const synthetic = megabytes > 0 ? measureSynthetic(megabytes) : [];
  if (synthetic.length > 0) {
    console.log('\n| synthetic input | MB | ms | ms per MB | peak memory MB | memory MB per input MB | verdict |');
    console.log('|---|---|---|---|---|---|---|');
    for (const s of synthetic) {
      console.log(
        `| ${s.name} | ${s.mb.toFixed(1)} | ${s.ms.toFixed(0)} | ${(s.ms / s.mb).toFixed(0)} | ${s.peakMb.toFixed(0)} | ${(s.peakMb / s.mb).toFixed(1)} | ${s.verdict} ${s.warnings.join(',')} |`,
      );
    }
  }
  if (args.json !== undefined) {
    const rows = quality.rows.map(({ perPageF1: _, ...row }) => row);
    writeFileSync(
      args.json,
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, pages: quality.pages, rows, ratio, synthetic }, null, 2)}\n`,
    );
  }
}
