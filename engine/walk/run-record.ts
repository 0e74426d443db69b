// The pipeline_runs record of one invocation (docs/behaviour/states.md#pipeline_runs-row), built in
// one place for a walk and for an invocation that never reached its pass: a busy writer fence
// (status fence_busy) or a pull-sync that failed (status failed). pipeline_runs is the ledger,
// so every accepted invocation leaves exactly one row with one terminal status.
//
// A walk's record, and a producer run's, also waits in the state store until it is known to have
// landed: written there in progress before the run starts, replaced by the terminal record
// before that is sent, removed once it arrived. So a run that died (SIGKILL, a crash, the host
// lost) leaves its record in progress, and the next run of its flow closes its row as abandoned;
// a terminal record the database or the web app could not take (the database gone as the run
// ended) is sent again by the next walk or producer run, whichever comes first.

import { randomUUID } from 'node:crypto';
import type { Config } from '../../lib/config.ts';
import type { Logger } from '../../lib/log.ts';
import type { RunRecord, RunRecorder, RunWarning } from '../../lib/runs/record.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { emptyRunCounters, type RunCounters } from '../../lib/run-context.ts';

export interface RunFacts {
  opId: string;
  flow?: RunRecord['flow'];
  status: RunRecord['status'];
  startedAt: string;
  finishedAt: string | null;
  counts: Record<string, number>;
  counters: RunCounters;
  warnings?: readonly RunWarning[];
  error?: string;
}

export function runRecord(config: Pick<Config, 'imageSha'>, facts: RunFacts): RunRecord {
  const { opId, flow, status, startedAt, finishedAt, counts, counters, warnings, error } = facts;
  return {
    opId,
    ...(flow === undefined ? {} : { flow }),
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

/**
 * Sends a run's terminal record, keeping it in the store until it landed. Never throws: with the
 * state store in the database, a database gone keeps nothing new, and the next run then closes
 * the record kept in progress at the start (as abandoned); a record left after it landed is only
 * sent again.
 */
export async function finishRun(store: StateStore, runs: RunRecorder, record: RunRecord): Promise<void> {
  const kept = await store.putUnsettledRun(record).then(
    () => true,
    () => false,
  );
  if ((await runs.finish(record)) && kept) await store.removeUnsettledRun(record.opId).catch(() => {});
}

/** Why a run's row was closed as abandoned, by its flow. */
const ABANDONED_ERROR: Record<NonNullable<RunRecord['flow']>, string> = {
  walk: "the walk's process ended before the walk did (killed or crashed); the next walk redid its unfinished items",
  producer: "the producer's process ended before its run did; the next run took its work up",
};

/**
 * Settles what earlier runs left in the store: a record of `flow` still in progress is a run
 * whose process died, closed now as abandoned (its counts are those it started with); a terminal
 * record of any flow that was not delivered is sent again. A walk calls it before its own start,
 * inside the writer fence, and a producer run under its lease, so no live run of `flow` is among
 * them; a run of the other flow may be alive, and its record in progress is left to its own.
 */
export async function settleEarlierRuns(
  store: StateStore,
  runs: RunRecorder,
  log: Logger,
  flow: NonNullable<RunRecord['flow']>,
): Promise<void> {
  for (const earlier of await store.unsettledRuns()) {
    const earlierFlow = earlier.flow ?? 'walk';
    if (earlier.status === 'in_progress' && earlierFlow !== flow) continue;
    const record: RunRecord =
      earlier.status === 'in_progress'
        ? {
            ...earlier,
            status: 'abandoned',
            finishedAt: new Date().toISOString(),
            result: { ...earlier.result, error: ABANDONED_ERROR[earlierFlow] },
          }
        : earlier;
    if (!(await runs.finish(record))) continue;
    await store.removeUnsettledRun(record.opId);
    log.warn(
      { earlierOpId: record.opId, flow: earlierFlow, status: record.status },
      `settled the run record of an earlier ${earlierFlow === 'walk' ? 'walk' : 'producer run'}`,
    );
  }
}
