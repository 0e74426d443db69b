// What `ingest prefill` saves (docs/OPERATIONS.md "Half price for a backfill"): on a generated
// corpus, a plain cold walk against a prefill through the mock's batch API followed by the same
// walk. It reports the requests bought and the answers stored, the tokens the answers counted and
// their price at the standard and the batch rate (lib/llm/prices.ts), the extraction calls each
// walk made (goal after a prefill: 0) and whether both walks wrote the same rows. Every step is a
// real `ingest` process (the mock included), on the embedded database, each walk with a data
// directory of its own.
//
//   npm run bench -- prefill [--docs N] [--seed S] [--batch-delay-ms D] [--json FILE]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { PrefillSummary } from '../engine/prefill/prefill.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { startMockProcess, type MockProcess } from './mock-process.ts';
import { extractionCallsOf, mockTierEnv } from './mock-tier.ts';
import { printTable, rate, writeJson } from './report.ts';
import { runIngest } from './ingest-command.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '200' },
    seed: { type: 'string', default: '1' },
    'batch-delay-ms': { type: 'string', default: '0' },
    json: { type: 'string' },
  },
});

/** Runs `ingest` with `argv` on the data directory `dataDir`; resolves with its stdout once it exits 0. */
function ingest(argv: string[], dataDir: string, mock: MockProcess): Promise<string> {
  return runIngest(argv, {
    PATH: process.env.PATH ?? '',
    INGEST_DATA_DIR: dataDir,
    INGEST_LOG_LEVEL: 'error',
    INGEST_PRODUCER_AFTER_WALK: 'false',
    INGEST_PREFILL_POLL_MS: '200',
    ...mockTierEnv(mock.url),
  });
}

/** The extraction calls the mock has answered so far. */
const extractionCalls = async (mock: MockProcess): Promise<number> => extractionCallsOf(await mock.stats());

/** A cold walk in a data directory of its own: its summary and the extraction calls it made. */
async function coldWalk(corpus: string, dataDir: string, mock: MockProcess) {
  const before = await extractionCalls(mock);
  const summary = JSON.parse(await ingest(['walk', corpus, '--json'], dataDir, mock)) as WalkSummary;
  return { summary, extractionCalls: (await extractionCalls(mock)) - before };
}

const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-prefill-'));
const mock = await startMockProcess(0, ['--batch-delay-ms', args['batch-delay-ms']]);
try {
  const corpus = path.join(root, 'corpus');
  await ingest(['bench', 'corpus', '--docs', args.docs, '--seed', args.seed, corpus], root, mock);
  const plain = await coldWalk(corpus, path.join(root, 'plain'), mock);
  const prefilledDir = path.join(root, 'prefilled');
  const started = performance.now();
  const prefilled = JSON.parse(await ingest(['prefill', corpus, '--json'], prefilledDir, mock)) as PrefillSummary;
  const prefillSeconds = (performance.now() - started) / 1000;
  const after = await coldWalk(corpus, prefilledDir, mock);
  const sameRows = JSON.stringify(plain.summary.rows) === JSON.stringify(after.summary.rows);
  const { price, tokens, requests, answers } = prefilled;
  console.log(
    `\nPrefill of ${args.docs} generated documents (seed ${args.seed}) for ${prefilled.model}, ` +
      `batches ending ${args['batch-delay-ms']} ms after creation:`,
  );
  printTable(
    ['figure', 'value'],
    [
      ['requests bought (distinct windows x extractors)', rate(requests.submitted)],
      ['answers stored', rate(answers.stored)],
      ['input / output tokens counted', `${rate(tokens.input)} / ${rate(tokens.output)}`],
      ['input tokens estimated before submitting', rate(tokens.estimatedInput)],
      [
        'price at the standard / the batch rate (USD)',
        price === null ? 'unpriced' : `${price.standard.toFixed(2)} / ${price.batch.toFixed(2)} (${price.asOf})`,
      ],
      ['prefill seconds', prefillSeconds.toFixed(1)],
      ["plain cold walk's extraction calls", rate(plain.extractionCalls)],
      ['the walk after the prefill: extraction calls (goal 0)', rate(after.extractionCalls)],
      ['both walks wrote the same rows per table', sameRows ? 'yes' : 'no'],
    ],
  );
  await writeJson(args.json, 'prefill', {
    docs: Number(args.docs),
    seed: Number(args.seed),
    prefill: prefilled,
    prefillSeconds,
    plainWalk: { extractionCalls: plain.extractionCalls, rows: plain.summary.rows },
    walkAfterPrefill: { extractionCalls: after.extractionCalls, rows: after.summary.rows },
    sameRows,
  });
  if (after.extractionCalls !== 0 || !sameRows) process.exitCode = 1;
} finally {
  await mock.close();
  rmSync(root, { recursive: true, force: true });
}
