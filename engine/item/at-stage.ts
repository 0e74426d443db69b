// Every step of an item's life runs at a named stage, so that a failure is tallied with the
// stage it happened at (the walk's failure list) and the walk benchmark can time each stage.
// The observer belongs to the walk that asked for one (engine/walk/walk.ts observeStage): it rides
// with that walk's work, so two walks in one process each time only their own items.

import { AsyncLocalStorage } from 'node:async_hooks';

import { codeOf, IngestError } from '../../lib/errors.ts';

/** A failure pinned to the stage where it happened, for the walk's tally: the cause's code and message. */
export class StageError extends IngestError {
  readonly stage: string;
  constructor(stage: string, cause: unknown) {
    super(codeOf(cause), cause instanceof Error ? cause.message : String(cause), { cause });
    this.stage = stage;
  }
}

/** Told how long each stage of each item took (the walk benchmark's per-stage p50/p99). */
export type StageObserver = (stage: string, milliseconds: number) => void;
const walkObservers = new AsyncLocalStorage<StageObserver>();

/** Runs `work` (and everything it starts) with its stages told to `observer`. */
export function observingStages<T>(observer: StageObserver, work: () => T): T {
  return walkObservers.run(observer, work);
}

export async function atStage<T>(stage: string, work: () => Promise<T> | T): Promise<T> {
  const stageObserver = walkObservers.getStore();
  const started = stageObserver === undefined ? 0 : performance.now();
  try {
    return await work();
  } catch (error) {
    throw error instanceof StageError ? error : new StageError(stage, error);
  } finally {
    stageObserver?.(stage, performance.now() - started);
  }
}
