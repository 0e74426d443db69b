// A distributed walk (INGEST_WALK_MODE=distributed) against a latency-bound mock: for W walk
// workers, each with model concurrency C, a cold walk's model calls per second as a fraction of
// W x C / L (Little's law: C calls in flight per worker, each L long). Goal (issue 43): >= 0.9.
// The mock's count is sampled as the walk runs, so that the items' phase (until the last item
// settled) is told apart from the flow-scope passes after it, which run once, on the
// coordinator, whatever W is (their time is the summary's passes[].durationMs).
// PostgreSQL only (run it through scripts/pg-with-vector.sh); every process is a real `ingest`
// process: the coordinator (`ingest walk`), the workers (`ingest walk-worker`), the mock.
//
//   node bench/distributed.ts [--docs N] [--workers 1,2,4] [--latency-ms L] [--concurrency C] [--json FILE]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { startMockProcess, type MockProcess } from './mock-process.ts';
import { mockTierEnv } from './mock-tier.ts';
import { printTable, writeJson } from './report.ts';
import { openTestDatabase } from './scratch-database.ts';
import { startWalkWorkers, stopWalkWorkers } from './walk-workers.ts';
import { runIngest } from './ingest-command.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '200' },
    workers: { type: 'string', default: '1,2,4' },
    'latency-ms': { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '8' },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const LATENCY_MS = Number(args['latency-ms']);
const CONCURRENCY = Number(args.concurrency);

if (!process.env.ENGINE_DB_DSN)
  throw new Error('bench/distributed.ts needs ENGINE_DB_DSN: run it through scripts/pg-with-vector.sh');

interface Result {
  workers: number;
  seconds: number;
  passesSeconds: number;
  calls: number;
  callsPerSecond: number;
  /** Model calls per second from the first call to the last item settled. */
  itemCallsPerSecond: number;
  bound: number;
  changed: number;
  failed: number;
}

async function runWith(count: number, corpus: string, mock: MockProcess, root: string): Promise<Result> {
  const scratch = await openTestDatabase();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    ENGINE_DB_DSN: scratch.dsn!,
    INGEST_DATA_DIR: path.join(root, `w${count}`),
    INGEST_LOG_LEVEL: 'error',
    INGEST_PRODUCER_AFTER_WALK: 'false',
    INGEST_WALK_MODE: 'distributed',
    INGEST_STATE_STORE: 'database',
    INGEST_MODEL_CONCURRENCY: String(CONCURRENCY),
    // Enough items in flight per worker to keep its C model calls busy.
    INGEST_WALK_IN_FLIGHT: String(2 * CONCURRENCY),
    ...mockTierEnv(mock.url),
  };
  const workers = await startWalkWorkers(count, corpus, env);
  // The coordinator runs no item: its model concurrency is its passes', and while they run the
  // workers are idle, so they may take the whole provider allowance (docs/OPERATIONS.md "A walk
  // on several machines").
  const coordinator = { ...env, INGEST_MODEL_CONCURRENCY: String(count * CONCURRENCY) };
  try {
    const before = await mock.calls();
    const sampler = new CallSampler(mock, before);
    const summary = JSON.parse(await runIngest(['walk', corpus, '--json'], coordinator)) as WalkSummary;
    const passesMs = summary.passes.reduce((sum, pass) => sum + pass.durationMs, 0);
    const itemCallsPerSecond = sampler.stop(passesMs);
    const calls = (await mock.calls()) - before;
    const seconds = summary.durationMs / 1000;
    const bound = (count * CONCURRENCY * 1000) / LATENCY_MS;
    console.error(
      `${count} worker(s): ${seconds.toFixed(1)} s, ${calls} calls, ${(calls / seconds).toFixed(1)} calls/s, ` +
        `${itemCallsPerSecond.toFixed(1)} in the items' phase`,
    );
    return {
      workers: count,
      seconds,
      passesSeconds: passesMs / 1000,
      calls,
      callsPerSecond: calls / seconds,
      itemCallsPerSecond,
      bound,
      changed: summary.items.changed,
      failed: summary.items.failed,
    };
  } finally {
    await stopWalkWorkers(workers);
    await scratch.dispose();
  }
}

/** The mock's call count every 250 ms while a walk runs. */
class CallSampler {
  readonly #started = performance.now();
  readonly #samples: { ms: number; calls: number }[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(mock: MockProcess, before: number) {
    this.#timer = setInterval(() => {
      const ms = performance.now() - this.#started;
      void mock.calls().then((calls) => this.#samples.push({ ms, calls: calls - before }));
    }, 250);
  }

  /** Stops; the calls per second from the first call to `passesMs` before the walk's end. */
  stop(passesMs: number): number {
    clearInterval(this.#timer);
    const itemsEnd = performance.now() - this.#started - passesMs;
    const first = this.#samples.find((sample) => sample.calls > 0);
    const last = this.#samples.findLast((sample) => sample.ms <= itemsEnd);
    if (first === undefined || last === undefined || last.ms <= first.ms) return 0;
    return (last.calls - first.calls) / ((last.ms - first.ms) / 1000);
  }
}

const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-distributed-'));
const results: Result[] = [];
const mock = await startMockProcess(LATENCY_MS);
try {
  const corpus = path.join(root, 'corpus');
  await runIngest(['bench', 'corpus', '--docs', String(DOCS), '--seed', '1', corpus], { PATH: process.env.PATH ?? '' });
  for (const count of args.workers.split(',').map(Number)) results.push(await runWith(count, corpus, mock, root));
} finally {
  await mock.close();
  rmSync(root, { recursive: true, force: true });
}
console.log(
  `\nA distributed walk of ${DOCS} documents (seed 1), mock latency ${LATENCY_MS} ms, model concurrency ${CONCURRENCY} per worker:`,
);
printTable(
  [
    'walk workers',
    'seconds (passes)',
    'model calls',
    'calls/s',
    "items' phase calls/s",
    'bound W x C / L',
    'fraction (items)',
    'changed / failed',
  ],
  results.map((r) => [
    String(r.workers),
    `${r.seconds.toFixed(1)} (${r.passesSeconds.toFixed(1)})`,
    String(r.calls),
    r.callsPerSecond.toFixed(1),
    r.itemCallsPerSecond.toFixed(1),
    r.bound.toFixed(1),
    `${(r.callsPerSecond / r.bound).toFixed(2)} (${(r.itemCallsPerSecond / r.bound).toFixed(2)})`,
    `${r.changed} / ${r.failed}`,
  ]),
);
await writeJson(args.json, 'distributed', { docs: DOCS, latencyMs: LATENCY_MS, concurrency: CONCURRENCY, results });
