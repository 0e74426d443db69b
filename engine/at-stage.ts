// Every step of an item's life runs at a named stage, so that a failure is tallied with the
// stage it happened at (the walk's failure list) and the walk benchmark can time each stage.

import { codeOf, IngestError } from '../lib/errors.ts';

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
let stageObserver: StageObserver | null = null;

export function observeStages(observer: StageObserver | null): void {
  stageObserver = observer;
}

export async function atStage<T>(stage: string, work: () => Promise<T> | T): Promise<T> {
  const started = stageObserver === null ? 0 : performance.now();
  try {
    return await work();
  } catch (error) {
    throw error instanceof StageError ? error : new StageError(stage, error);
  } finally {
    stageObserver?.(stage, performance.now() - started);
  }
}
