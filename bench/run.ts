// `npm run bench -- <name> [options]`: one entry for every benchmark (bench/README.md).

const BENCHMARKS: Record<string, { file: string; summary: string }> = {
  sink: { file: './sink-strategies.ts', summary: 'UPSERT shapes and the sink per table against the raw COPY limit' },
  walk: {
    file: './walk.ts',
    summary: 'cold, warm, touched and latency-bound walks on the mock tier; RSS, state store',
  },
  'walk-limit': {
    file: './walk-limit.ts',
    summary: 'the cold walk by `ingest walk` against the sink alone on the same rows: rows/s, ratio, CPU ms/doc',
  },
  'large-item': {
    file: './large-item.ts',
    summary: 'one large text file walked alone (10, 50, 100 MB): peak RSS of the walk and the database, time',
  },
  convert: { file: './convert.ts', summary: 'PDF, DOCX, XLSX through the converter pool against a single thread' },
  state: { file: './state-store-size.ts', summary: 'state store size per 10k chunks' },
  'qa-dedup': {
    file: './qa-dedup.ts',
    summary: 'Q&A dedup proposals: precision and recall on repeated FAQ entries, the unchanged pass',
  },
  resolve: {
    file: './resolve.ts',
    summary: 'entity resolution: cluster quality against known variants, blocking recall, the pass cost',
  },
  producer: {
    file: './producer.ts',
    summary: 'the knowledge-bundle producer after a cold walk, a 1 % touch and no change: time, calls, memory',
  },
  watch: {
    file: './watch.ts',
    summary: 'watch mode under random file operations: missed and phantom documents, walks, save -> durable p50/p99',
  },
  worker: {
    file: './worker.ts',
    summary: 'bid-worker: model calls/s against C/L for one and two workers; recall at 5 of template_fill',
  },
  distributed: {
    file: './distributed.ts',
    summary: 'a distributed walk on W = 1, 2, 4 walk workers against a latency-bound mock: calls/s against W x C / L',
  },
  prefill: {
    file: './prefill.ts',
    summary: 'ingest prefill then a walk against a plain walk: requests, tokens, price at both rates, calls after',
  },
  'model-budget': {
    file: './model-budget.ts',
    summary: 'the shared model budget against a token limit: throughput as a share of the limit, failures, 429s',
  },
  http: { file: './http-latency.ts', summary: '/health and /extract latency while a walk runs' },
  'cli-startup': {
    file: './cli-startup.ts',
    summary: '`ingest --help` start-up time and memory against a bare Node start and loading every command',
  },
  'first-walk': {
    file: './first-walk.ts',
    summary: "a newcomer's first walk (the embedded database created) and the second: time and peak memory per process",
  },
  extract: {
    file: './extract-quality.ts',
    summary: 'HTML cleaner F1 and speed against Readability on the extract-bench pages (--bench DIR)',
  },
};

const [name, ...rest] = process.argv.slice(2);
const chosen = name === undefined ? undefined : BENCHMARKS[name];
if (chosen === undefined) {
  const width = Math.max(...Object.keys(BENCHMARKS).map((k) => k.length));
  process.stderr.write(
    `usage: npm run bench -- <benchmark> [options]   (options in bench/README.md)\n\n${Object.entries(BENCHMARKS)
      .map(([k, b]) => `  ${k.padEnd(width)}  ${b.summary}`)
      .join('\n')}\n`,
  );
  process.exitCode = name === undefined || name === '--help' ? 0 : 2;
} else {
  // Each benchmark reads its options from process.argv, as when it is run directly.
  process.argv = [process.argv[0]!, new URL(chosen.file, import.meta.url).pathname, ...rest];
  await import(chosen.file);
}
