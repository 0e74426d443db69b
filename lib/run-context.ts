// The run-context holder (docs/behaviour/states.md#memo-and-stamping): the current walk's op_id and
// its four observability counters. It is published at walk start and deliberately never
// cleared at walk end (the last walk's opId stays readable), and ingest bodies read it here
// rather than taking it as an argument, so it can never become part of a memo key.

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

let current: RunContext | null = null;

export const emptyRunCounters = (): RunCounters => ({
  model_retry: 0,
  taxonomy_miss: 0,
  item_failure: 0,
  memo_heal: 0,
});

export function publishRunContext(opId: string, fullReprocess: boolean): RunContext {
  current = { opId, fullReprocess, counters: emptyRunCounters() };
  return current;
}

export function currentRunContext(): RunContext {
  if (current === null) throw new Error('no walk has published a run context yet');
  return current;
}

export function countEvent(counter: keyof RunCounters, by = 1): void {
  currentRunContext().counters[counter] += by;
}
