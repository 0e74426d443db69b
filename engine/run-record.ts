// The pipeline_runs record of one invocation (SPEC.md 3 "pipeline_runs row", SPEC.md 6), built in
// one place for a walk and for an invocation that never reached its pass: a busy writer fence
// (status fence_busy) or a pull-sync that failed (status failed). pipeline_runs is the ledger,
// so every accepted invocation leaves exactly one row with one terminal status.

import { randomUUID } from 'node:crypto';
import type { Config } from '../lib/config.ts';
import type { RunRecord, RunRecorder, RunWarning } from '../lib/runs/record.ts';
import { emptyRunCounters, type RunCounters } from '../lib/run-context.ts';

export interface RunFacts {
  opId: string;
  status: RunRecord['status'];
  startedAt: string;
  finishedAt: string | null;
  counts: Record<string, number>;
  counters: RunCounters;
  warnings?: readonly RunWarning[];
  error?: string;
}

export function runRecord(config: Pick<Config, 'imageSha'>, facts: RunFacts): RunRecord {
  const { opId, status, startedAt, finishedAt, counts, counters, warnings, error } = facts;
  return {
    opId,
    status,
    startedAt,
    finishedAt,
    result: {
      ...(config.imageSha === null ? {} : { extractor_version: config.imageSha }),
      counts,
      counters: { ...counters },
      ...(warnings === undefined || warnings.length === 0 ? {} : { warnings: [...warnings] }),
      ...(error === undefined ? {} : { error }),
    },
  };
}

/** The one row of an invocation that ended before its pass: started and finished at once. */
export async function recordUnwalked(
  runs: RunRecorder,
  config: Pick<Config, 'imageSha'>,
  status: 'fence_busy' | 'failed',
  error?: string,
): Promise<void> {
  const now = new Date().toISOString();
  const facts = {
    opId: randomUUID(),
    startedAt: now,
    counts: {},
    counters: emptyRunCounters(),
    ...(error === undefined ? {} : { error }),
  };
  await runs.start(runRecord(config, { ...facts, status: 'in_progress', finishedAt: null }));
  await runs.finish(runRecord(config, { ...facts, status, finishedAt: now }));
}
