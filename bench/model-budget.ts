// The shared model budget against a provider's token limit (issue 43): P processes of extraction
// calls (bench/model-budget-load.ts, the real clients) against one mock limiting tokens per
// window and per model; their budget is a share of that limit, in PostgreSQL when ENGINE_DB_DSN
// is set (one budget for every process), else in process memory (one process). The goal:
// throughput at least 0.9 of the limit with 0 failed calls. Throughput counts the tokens the mock
// admitted per whole window once the run is steady, against the limit (the whole run's figure
// beside it). A run with no budget is measured beside it for comparison (its 429s retried).
//
//   node bench/model-budget.ts [--limit 8000] [--window-ms 1000] [--window fixed|sliding] [--shares 0.95,none]
//     [--processes 3] [--seconds 12] [--json FILE]

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { startMockServer, type AdmissionRecord } from '../mock/server.ts';
import type { LoadResult } from './model-budget-load.ts';
import { printTable, writeJson } from './report.ts';
import { openTestDatabase, targetEngine } from './scratch-database.ts';

const { values } = parseArgs({
  options: {
    limit: { type: 'string', default: '8000' },
    'window-ms': { type: 'string', default: '1000' },
    window: { type: 'string', default: 'fixed' },
    shares: { type: 'string', default: '0.95,none' },
    processes: { type: 'string', default: targetEngine === 'postgres' ? '3' : '1' },
    seconds: { type: 'string', default: '12' },
    json: { type: 'string' },
  },
});
const LIMIT = Number(values.limit);
const WINDOW_MS = Number(values['window-ms']);
const WINDOW = values.window === 'sliding' ? 'sliding' : 'fixed';
const PROCESSES = Number(values.processes);
const SECONDS = Number(values.seconds);
/** About what one call of the load costs on the mock (measured: 359 tokens on average). */
const TOKENS_PER_CALL = 360;
const LOAD = fileURLToPath(new URL('./model-budget-load.ts', import.meta.url));

if (targetEngine === 'pglite' && PROCESSES > 1)
  throw new Error('on PGlite the budget is one process’s memory: run with --processes 1, or on PostgreSQL');

interface Row {
  share: string;
  processes: number;
  calls: number;
  failed: number;
  limited: number;
  seconds: number;
  /** Tokens admitted per window, steady: the share of the limit is this over the limit. */
  tokensPerWindow: number;
  ofLimit: number;
  /** The same over the whole run, its start included. */
  ofLimitWholeRun: number;
}

/**
 * The tokens admitted per window: over every whole window between the first and the last
 * admission, and over the steady part (the first quarter of those windows left out: the
 * processes start, connect and learn their calls' output there).
 */
function throughput(admissions: readonly AdmissionRecord[]): { whole: number; steady: number } {
  const admitted = admissions.filter((a) => a.retryAfterMs === undefined);
  const first = Math.ceil(admitted[0]!.at / WINDOW_MS);
  const last = Math.floor(admitted.at(-1)!.at / WINDOW_MS);
  if (last - first < 4) throw new Error('the run was shorter than four whole windows: raise --seconds');
  const perWindow = (from: number) =>
    admitted.filter((a) => a.at >= from * WINDOW_MS && a.at < last * WINDOW_MS).reduce((n, a) => n + a.tokens, 0) /
    (last - from);
  return { whole: perWindow(first), steady: perWindow(first + Math.floor((last - first) / 4)) };
}

async function measure(share: number | null): Promise<Row> {
  const database = await openTestDatabase();
  const mock = await startMockServer({ limits: { windowMs: WINDOW_MS, window: WINDOW, per: { tokens: LIMIT } } });
  const calls = Math.ceil((SECONDS * LIMIT * (1000 / WINDOW_MS)) / TOKENS_PER_CALL / PROCESSES);
  const env = {
    ...process.env,
    ANTHROPIC_BASE_URL: mock.url,
    INGEST_LOG_LEVEL: 'silent',
    ...(database.dsn === null ? {} : { ENGINE_DB_DSN: database.dsn }),
    ...(share === null
      ? {}
      : {
          INGEST_ANTHROPIC_TOKENS_PER_MINUTE: String(Math.floor((LIMIT * share * 60_000) / WINDOW_MS)),
          INGEST_MODEL_BUDGET_WINDOW_MS: String(WINDOW_MS),
        }),
  };
  try {
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: PROCESSES }, async (_, n) => {
        const args = [LOAD, '--calls', String(calls), '--concurrency', '8', '--offset', String(n * calls)];
        const { stdout } = await promisify(execFile)(process.execPath, args, { env });
        return JSON.parse(stdout) as LoadResult;
      }),
    );
    const measured = throughput(mock.admissions);
    return {
      share: share === null ? 'none' : String(share),
      processes: PROCESSES,
      calls: results.reduce((n, r) => n + r.ok + r.failed, 0),
      failed: results.reduce((n, r) => n + r.failed, 0),
      limited: mock.stats.limited,
      seconds: (Date.now() - started) / 1000,
      tokensPerWindow: Math.round(measured.steady),
      ofLimit: measured.steady / LIMIT,
      ofLimitWholeRun: measured.whole / LIMIT,
    };
  } finally {
    await mock.close();
    await database.dispose();
  }
}

const rows: Row[] = [];
for (const share of values.shares.split(',')) rows.push(await measure(share === 'none' ? null : Number(share)));
console.log(
  `model budget on ${targetEngine}: ${PROCESSES} process(es), the mock's limit ${LIMIT} tokens per ${WINDOW_MS} ms window (${WINDOW})`,
);
printTable(
  ['budget (share of limit)', 'calls', 'failed', '429s', '429 share', 's', 'tokens/window', 'of limit', 'whole run'],
  rows.map((r) => [
    r.share,
    String(r.calls),
    String(r.failed),
    String(r.limited),
    `${((r.limited / (r.calls + r.limited)) * 100).toFixed(1)} %`,
    r.seconds.toFixed(1),
    String(r.tokensPerWindow),
    r.ofLimit.toFixed(3),
    r.ofLimitWholeRun.toFixed(3),
  ]),
);
await writeJson(values.json, 'model-budget', {
  engine: targetEngine,
  limit: LIMIT,
  windowMs: WINDOW_MS,
  window: WINDOW,
  rows,
});
