// A distributed walk (INGEST_WALK_MODE=distributed) against a latency-bound mock: for W walk
// workers, each with model concurrency C, a cold walk's model calls per second as a fraction of
// W x C / L (Little's law: C calls in flight per worker, each L long). Goal (issue 43): >= 0.9.
// PostgreSQL only (run it through scripts/pg-with-vector.sh); every process is a real `ingest`
// process: the coordinator (`ingest walk`), the workers (`ingest walk-worker`), the mock.
//
//   node bench/distributed.ts [--docs N] [--workers 1,2,4] [--latency-ms L] [--concurrency C] [--json FILE]

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { startMockProcess, type MockProcess } from './mock-process.ts';
import { mockTierEnv } from './mock-tier.ts';
import { printTable, writeJson } from './report.ts';
import { openTestDatabase } from './scratch-database.ts';
import { startWalkWorkers, stopWalkWorkers } from './walk-workers.ts';

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
const BIN = fileURLToPath(new URL('../bin/ingest.ts', import.meta.url));

if (!process.env.ENGINE_DB_DSN)
  throw new Error('bench/distributed.ts needs ENGINE_DB_DSN: run it through scripts/pg-with-vector.sh');

interface Result {
  workers: number;
  seconds: number;
  calls: number;
  callsPerSecond: number;
  bound: number;
  changed: number;
  failed: number;
}

/** Runs `ingest` with `args`; resolves with its stdout once it exits 0. */
async function ingest(argv: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...argv], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`ingest ${argv[0]} exited with ${code}`);
  return out;
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
  try {
    const before = await mock.calls();
    const summary = JSON.parse(await ingest(['walk', corpus, '--json'], env)) as WalkSummary;
    const calls = (await mock.calls()) - before;
    const seconds = summary.durationMs / 1000;
    const bound = (count * CONCURRENCY * 1000) / LATENCY_MS;
    console.error(
      `${count} worker(s): ${seconds.toFixed(1)} s, ${calls} calls, ${(calls / seconds).toFixed(1)} calls/s`,
    );
    return {
      workers: count,
      seconds,
      calls,
      callsPerSecond: calls / seconds,
      bound,
      changed: summary.items.changed,
      failed: summary.items.failed,
    };
  } finally {
    await stopWalkWorkers(workers);
    await scratch.dispose();
  }
}

const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-distributed-'));
const results: Result[] = [];
const mock = await startMockProcess(LATENCY_MS);
try {
  const corpus = path.join(root, 'corpus');
  await ingest(['bench', 'corpus', '--docs', String(DOCS), '--seed', '1', corpus], { PATH: process.env.PATH ?? '' });
  for (const count of args.workers.split(',').map(Number)) results.push(await runWith(count, corpus, mock, root));
} finally {
  await mock.close();
  rmSync(root, { recursive: true, force: true });
}
console.log(
  `\nA distributed walk of ${DOCS} documents (seed 1), mock latency ${LATENCY_MS} ms, model concurrency ${CONCURRENCY} per worker:`,
);
printTable(
  ['walk workers', 'seconds', 'model calls', 'calls/s', 'bound W x C / L', 'fraction', 'changed / failed'],
  results.map((r) => [
    String(r.workers),
    r.seconds.toFixed(1),
    String(r.calls),
    r.callsPerSecond.toFixed(1),
    r.bound.toFixed(1),
    (r.callsPerSecond / r.bound).toFixed(2),
    `${r.changed} / ${r.failed}`,
  ]),
);
await writeJson(args.json, 'distributed', { docs: DOCS, latencyMs: LATENCY_MS, concurrency: CONCURRENCY, results });
