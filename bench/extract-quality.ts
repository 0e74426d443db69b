// The HTML cleaner against @mozilla/readability + linkedom, side by side in one run, on both
// development sets of the extract-bench pages (real pages with ground truth), scored with the
// benchmark's own metric module (4-word shingles, precision and recall averaged over pages).
// Each set is reported on its tuned part and on its kept-aside part (bench/extract-sets.ts),
// and wcxb-dev per page kind too. Then time and memory per MB of input on large synthetic
// pages (deep nesting, tag soup, a long article, a big table), each in a fresh child process
// so its peak memory is its own.
//
//   node bench/extract-quality.ts [--bench DIR] [--limit N] [--synthetic-mb N] [--worst N] [--json FILE]
//                                 [--rs-trafilatura DIR]
//
// The pages are not in the repository: --bench DIR (or INGEST_EXTRACT_BENCH_DIR) names the folder
// holding data/ and wcxb-dev/ (each with ground-truth.json) and lib/metric.mjs. Without either the
// scoring is skipped with a message and only the synthetic part runs, so the smoke run passes on
// a clone; a folder named but holding no pages is an error (exit 2).
//
// --rs-trafilatura adds rs-trafilatura, the best published extractor on both sets, to the same
// run: DIR is an unpacked `npm pack contextractor@0.4.14` (its package/ folder), whose native
// binding is rs-trafilatura; only that binding is loaded, so none of the package's crawler
// dependencies are installed. It is not a dependency of this project (bench/README.md).
//
// --limit takes the first N pages of each set (a smoke run); --worst lists the cleaner's worst
// pages of the tuned part only, so tuning never looks at a kept-aside page.
// Target (docs/DECISIONS.md "HTML cleaner"): the cleaner's median ms per page at most a quarter
// of Readability's in the same run; its F1 on each kept-aside part is reported beside
// Readability's.

import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { cleanHtml } from '../stages/convert/html/index.ts';
import { loadSets, KEPT_SHARE, type BenchPage, type Part } from './extract-sets.ts';

const { values: args } = parseArgs({
  options: {
    bench: { type: 'string' },
    limit: { type: 'string' },
    'synthetic-mb': { type: 'string', default: '20' },
    worst: { type: 'string', default: '0' },
    json: { type: 'string' },
    'rs-trafilatura': { type: 'string' },
    // Internal: one synthetic measurement in this (child) process.
    'synthetic-case': { type: 'string' },
  },
});

/** Names the page sets' folder when --bench does not: they live outside the repository (bench/README.md). */
const PAGES_VARIABLE = 'INGEST_EXTRACT_BENCH_DIR';
const pagesDir = args.bench ?? (process.env[PAGES_VARIABLE]?.trim() || undefined);

const SPEED_TARGET = 0.25;
const WARMUP_PAGES = 3;

/** The text, and the kind of page when the extractor names one. */
type Extractor = (html: string) => { text: string; kind?: string };

const extractors: Record<string, Extractor> = {
  cleaner: (html) => {
    const { text, kind } = cleanHtml(html);
    return { text, kind: kind ?? 'none' };
  },
  'readability+linkedom': (html) => {
    const { document } = parseHTML(html);
    return { text: new Readability(document).parse()?.textContent ?? '' };
  },
};
if (args['rs-trafilatura'] !== undefined) extractors['rs-trafilatura'] = rsTrafilatura(args['rs-trafilatura']);

/**
 * rs-trafilatura through contextractor's native binding, as plain text with trafilatura's
 * defaults for main text (tables kept; comments, images and links left out).
 */
function rsTrafilatura(packageDir: string): Extractor {
  const binding = createRequire(import.meta.url)(path.resolve(packageDir, 'dist', 'native', 'index.cjs')) as {
    extract(html: string, options: object): { content: string };
  };
  const config = {
    fast: false,
    favorPrecision: false,
    favorRecall: false,
    includeComments: false,
    includeTables: true,
    includeImages: false,
    includeFormatting: false,
    includeLinks: false,
    deduplicate: false,
    withMetadata: false,
    onlyWithMetadata: false,
    teiValidation: false,
  };
  return (html) => ({ text: binding.extract(html, { config, format: 'txt' }).content });
}

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

interface Scored {
  pages: number;
  /** Per extractor: the shingle metric's figures, and the mean per page of the word-level F1. */
  scores: Record<string, Pick<Metrics, 'f1' | 'precision' | 'recall' | 'f1_std'> & { wordF1: number }>;
}

const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];

/**
 * WCXB's leaderboard metric, so the figures stand beside the published ones: words as runs of
 * letters, digits and underscores, lower-cased; precision and recall from the words both texts
 * share, counted with repeats; F1 per page, then averaged over pages.
 */
function wordF1(truth: string, output: string): number {
  const expected = words(truth);
  const got = words(output);
  if (expected.length === 0) return got.length === 0 ? 1 : 0;
  if (got.length === 0) return 0;
  const left = new Map<string, number>();
  for (const w of expected) left.set(w, (left.get(w) ?? 0) + 1);
  let shared = 0;
  for (const w of got) {
    const n = left.get(w) ?? 0;
    if (n > 0) {
      shared += 1;
      left.set(w, n - 1);
    }
  }
  return shared === 0 ? 0 : (2 * shared) / (expected.length + got.length);
}

/** Every page through every extractor, side by side so machine noise falls on all alike. */
function runExtractors(pages: BenchPage[]) {
  const names = Object.keys(extractors);
  for (const page of pages.slice(0, WARMUP_PAGES)) for (const name of names) extractors[name]!(page.html);
  const outputs = new Map<BenchPage, Record<string, string>>();
  /** The kind of page the cleaner named. */
  const recognised = new Map<BenchPage, string>();
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const page of pages) {
    const out: Record<string, string> = {};
    for (const name of names) {
      const started = performance.now();
      let result: ReturnType<Extractor> = { text: '' };
      try {
        result = extractors[name]!(page.html);
      } catch {
        // A crash scores as an empty output.
      }
      times[name]!.push(performance.now() - started);
      out[name] = result.text;
      if (result.kind !== undefined) recognised.set(page, result.kind);
    }
    outputs.set(page, out);
  }
  return { outputs, recognised, medianMs: Object.fromEntries(names.map((n) => [n, median(times[n]!)])) };
}

async function measurePages(root: string, limit: number | undefined) {
  const metric = (await import(pathToFileURL(path.join(root, 'lib', 'metric.mjs')).href)) as MetricModule;
  const sets = loadSets(root, limit);
  const all = sets.flatMap((set) => set.pages);
  const { outputs, recognised, medianMs } = runExtractors(all);
  const names = Object.keys(extractors);

  const score = (pages: BenchPage[]): Scored => ({
    pages: pages.length,
    scores: Object.fromEntries(
      names.map((name) => {
        if (pages.length === 0) return [name, { f1: NaN, precision: NaN, recall: NaN, f1_std: NaN, wordF1: NaN }];
        const { metrics } = metric.evaluate(
          pages.map((p) => p.truth),
          pages.map((p) => outputs.get(p)![name]!),
          { nBootstrap: 200 },
        );
        const { f1, precision, recall, f1_std } = metrics;
        const wordMean = pages.reduce((sum, p) => sum + wordF1(p.truth, outputs.get(p)![name]!), 0) / pages.length;
        return [name, { f1, precision, recall, f1_std, wordF1: wordMean }];
      }),
    ),
  });
  const byPart = (pages: BenchPage[]) =>
    Object.fromEntries(
      (['tuned', 'kept'] as Part[]).map((part) => [part, score(pages.filter((p) => p.part === part))]),
    );
  /** How many pages the cleaner named each kind, e.g. "article 9, product 6". */
  const namedAs = (pages: BenchPage[]) => {
    const counts = new Map<string, number>();
    for (const page of pages) counts.set(recognised.get(page)!, (counts.get(recognised.get(page)!) ?? 0) + 1);
    return [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ');
  };

  const results = sets.map((set) => {
    const kinds = [...new Set(set.pages.map((p) => p.kind))].sort(
      (a, b) => set.pages.filter((p) => p.kind === b).length - set.pages.filter((p) => p.kind === a).length,
    );
    return {
      name: set.name,
      description: set.description,
      parts: byPart(set.pages),
      whole: score(set.pages),
      kinds:
        kinds.length > 1
          ? Object.fromEntries(kinds.map((kind) => [kind, byPart(set.pages.filter((p) => p.kind === kind))]))
          : {},
      namedAs: Object.fromEntries(
        kinds.map((kind) => [
          kind,
          Object.fromEntries(
            (['tuned', 'kept'] as Part[]).map((part) => [
              part,
              namedAs(set.pages.filter((p) => p.kind === kind && p.part === part)),
            ]),
          ),
        ]),
      ),
    };
  });

  const perPage = (page: BenchPage, name: string) =>
    metric.evaluate([page.truth], [outputs.get(page)![name]!], { nBootstrap: 0 }).perDoc[0]!.f1;
  const worstTuned = (count: number) =>
    sets
      .flatMap((set) =>
        set.pages
          .filter((p) => p.part === 'tuned')
          .map((p) => ({
            set: set.name,
            id: p.id,
            kind: p.kind,
            f1: perPage(p, 'cleaner'),
            readability: NaN,
            page: p,
          })),
      )
      .sort((a, b) => a.f1 - b.f1)
      .slice(0, count)
      .map(({ page, ...row }) => ({ ...row, readability: perPage(page, 'readability+linkedom') }));
  return { pages: all.length, results, medianMs, worstTuned };
}

// ---- main -------------------------------------------------------------------------------------

const f3 = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(3));

/** Prints the page sets' scores and speeds; returns the cleaner's median ms as a share of Readability's. */
function reportQuality(quality: Awaited<ReturnType<typeof measurePages>>, root: string): number {
  const ratio = quality.medianMs.cleaner! / quality.medianMs['readability+linkedom']!;
  console.log(
    `${quality.pages} pages from ${path.relative(process.cwd(), root) || '.'}; ${KEPT_SHARE * 100} % of each set kept aside by a hash of the page id; node ${process.version}`,
  );
  for (const set of quality.results) {
    console.log(`\n${set.name}: ${set.description}\n`);
    console.log('| extractor | part | pages | F1 | P | R | word F1, mean per page |');
    console.log('|---|---|---|---|---|---|---|');
    for (const name of Object.keys(extractors))
      for (const part of ['tuned', 'kept'] as Part[]) {
        const scored = set.parts[part]!;
        const s = scored.scores[name]!;
        console.log(
          `| ${name} | ${part} | ${scored.pages} | ${f3(s.f1)} ± ${f3(s.f1_std)} | ${f3(s.precision)} | ${f3(s.recall)} | ${f3(s.wordF1)} |`,
        );
      }
    console.log(
      `\nwhole set (${set.whole.pages} pages), F1 / word F1: ${Object.keys(extractors)
        .map((name) => `${name} ${f3(set.whole.scores[name]!.f1)} / ${f3(set.whole.scores[name]!.wordF1)}`)
        .join(', ')}`,
    );
    if (Object.keys(set.kinds).length > 0) {
      console.log(
        `\n| kind | pages tuned / kept | ${Object.keys(extractors)
          .map((name) => `${name} tuned | ${name} kept`)
          .join(' | ')} | kind the cleaner named (kept part) |`,
      );
      console.log(`|---|---|${'---|---|'.repeat(Object.keys(extractors).length)}---|`);
      for (const [kind, parts] of Object.entries(set.kinds)) {
        const f1 = (part: Part, name: string) => f3(parts[part]!.scores[name]!.f1);
        console.log(
          `| ${kind} | ${parts.tuned!.pages} / ${parts.kept!.pages} | ${Object.keys(extractors)
            .map((name) => `${f1('tuned', name)} | ${f1('kept', name)}`)
            .join(' | ')} | ${set.namedAs[kind]!.kept} |`,
        );
      }
    }
  }
  console.log('\n| extractor | median ms/page (all pages) | ratio to Readability |');
  console.log('|---|---|---|');
  for (const [name, ms] of Object.entries(quality.medianMs))
    console.log(`| ${name} | ${ms.toFixed(2)} | ${(ms / quality.medianMs['readability+linkedom']!).toFixed(3)} |`);
  console.log(`\ntarget: ms ratio <= ${SPEED_TARGET} ${ratio <= SPEED_TARGET ? 'met' : 'MISSED'}`);
  const worst = Number(args.worst);
  if (worst > 0) {
    console.log('\nworst tuned pages for the cleaner (F1, Readability F1, set, kind, id):');
    for (const page of quality.worstTuned(worst))
      console.log(`  ${f3(page.f1)} ${f3(page.readability)} ${page.set} ${page.kind} ${page.id}`);
  }

  return ratio;
}

if (args['synthetic-case'] !== undefined) {
  measureSyntheticHere(args['synthetic-case'], Number(args['synthetic-mb']));
} else {
  if (pagesDir !== undefined && !existsSync(path.join(pagesDir, 'lib', 'metric.mjs'))) {
    process.stderr.write(`extract-quality: no benchmark at ${pagesDir}: it has no lib/metric.mjs\n`);
    process.exit(2);
  }
  const quality =
    pagesDir === undefined
      ? null
      : await measurePages(pagesDir, args.limit === undefined ? undefined : Number(args.limit));
  if (quality === null) {
    process.stderr.write(
      `extract-quality: no page sets named (--bench DIR or ${PAGES_VARIABLE}); F1 skipped, speed and memory on synthetic pages only\n`,
    );
  } else if (quality.pages === 0) {
    process.stderr.write(
      `extract-quality: no benchmark pages at ${pagesDir} (pass --bench DIR or set ${PAGES_VARIABLE})\n`,
    );
    process.exit(2);
  }
  const ratio = quality === null ? null : reportQuality(quality, pagesDir!);
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
    writeFileSync(
      args.json,
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          keptShare: KEPT_SHARE,
          pages: quality?.pages ?? 0,
          sets: quality?.results ?? [],
          medianMs: quality?.medianMs ?? null,
          ratio,
          synthetic,
        },
        null,
        2,
      )}\n`,
    );
  }
}
