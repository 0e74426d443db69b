// Real `ingest walk-worker` processes for a distributed walk, for the benchmark and the tests:
// started, resolved once each polls its queue, and stopped as an operator stops them (SIGTERM).

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/ingest.ts', import.meta.url));

/**
 * `count` walk workers on `corpus` (null: they read the corpus bucket `env` names), resolved once
 * each says it polls; their stderr stays readable.
 */
export async function startWalkWorkers(
  count: number,
  corpus: string | null,
  env: Record<string, string>,
): Promise<ChildProcess[]> {
  const workers = Array.from({ length: count }, () =>
    spawn(process.execPath, [BIN, 'walk-worker', ...(corpus === null ? [] : [corpus])], {
      env: { ...env, INGEST_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve, reject) => {
          let said = '';
          worker.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
            said = (said + chunk).slice(-4096);
            if (said.includes('walk worker polling')) resolve();
          });
          worker.once('exit', (code) => reject(new Error(`a walk worker exited with ${code}: ${said}`)));
        }),
    ),
  );
  return workers;
}

/** SIGTERM to every worker still running, and their exits awaited. */
export async function stopWalkWorkers(workers: readonly ChildProcess[]): Promise<void> {
  for (const worker of workers) {
    if (worker.exitCode !== null || worker.signalCode !== null) continue;
    worker.kill('SIGTERM');
    await once(worker, 'exit');
  }
}
