// The run context (docs/behaviour/states.md#memo-and-stamping): a walk's op_id, its
// full_reprocess flag and its four observability counters. Ingest bodies read it here rather
// than taking it as an argument, so it can never become part of a memo key.
//
// Each walk runs its items inside its own context (AsyncLocalStorage), so one process can work
// the items of two walks at once, each item's rows and counters its own walk's. The holder the
// specification names stays beside it: every walk publishes its context there at its start and
// nothing clears it, so the last walk's opId stays readable after it ends, and a reader outside
// any walk (a test driving a stage by hand) gets that walk's context (docs/DECISIONS.md "Run
// context per walk"). Counts are another matter: an event counts only into the context it
// happens in. An admin merge runs in a context of its own, whose counts its log line carries;
// an event outside any context counts nowhere, never into the last walk's run record.

import { AsyncLocalStorage } from 'node:async_hooks';

export interface RunCounters {
  model_retry: number;
  taxonomy_miss: number;
  item_failure: number;
  memo_heal: number;
}

export interface RunContext {
  readonly opId: string;
  readonly fullReprocess: boolean;
  readonly counters: RunCounters;
}

/** The context of the walk whose work is running now: set by inRunContext, read by currentRunContext. */
const walkContexts = new AsyncLocalStorage<RunContext>();

/** The published holder: the last walk's context, never cleared. */
let lastPublished: RunContext | null = null;

export const emptyRunCounters = (): RunCounters => ({
  model_retry: 0,
  taxonomy_miss: 0,
  item_failure: 0,
  memo_heal: 0,
});

/** A new walk's context, published as the last walk's; run its work with inRunContext. */
export function publishRunContext(opId: string, fullReprocess: boolean): RunContext {
  lastPublished = { opId, fullReprocess, counters: emptyRunCounters() };
  return lastPublished;
}

/** Runs `work` (and everything it starts) as the work of `run`'s walk. */
export function inRunContext<T>(run: RunContext, work: () => T): T {
  return walkContexts.run(run, work);
}

/** The context of the walk this work belongs to; outside any walk, the last one published. */
export function currentRunContext(): RunContext {
  const run = walkContexts.getStore() ?? lastPublished;
  if (run === null) throw new Error('no walk has published a run context yet');
  return run;
}

export function countEvent(counter: keyof RunCounters, by = 1): void {
  const run = walkContexts.getStore();
  if (run !== undefined) run.counters[counter] += by;
}

/** The op_id of the work running now, for its log lines (lib/log.ts); none outside a run context. */
export function runningOpId(): string | undefined {
  return walkContexts.getStore()?.opId;
}
