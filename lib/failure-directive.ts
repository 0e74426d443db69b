// The one-shot stage-5 failure directive (docs/behaviour/states.md#failure-directive): for exactly
// one walk, the credentials of the chosen mode are replaced by a non-empty invalid sentinel (an
// empty one would be scrubbed). Only that walk's stage-5 clients are built with it; the process's
// environment is never touched, so no other client built meanwhile gets it (docs/DECISIONS.md
// "The failure directive's sentinel, for stage 5's clients only").

export const FAIL_STAGE5_MODES = Object.freeze(['embedder', 'pair_resolver'] as const);
export type FailStage5Mode = (typeof FAIL_STAGE5_MODES)[number];

/** The credential swapped in; the mock model server refuses it with 401 like a dead key. */
export const FAILURE_SENTINEL = 'ingest-failure-injection-sentinel';

/** Whether `mode` breaks stage 5's client of this kind: the pair resolver's (llm) or its embedder's. */
export function breaks(mode: FailStage5Mode | null, client: 'llm' | 'embedder'): boolean {
  return mode === (client === 'llm' ? 'pair_resolver' : 'embedder');
}

/** The armed directive, one at a time, consumed by the next walk. */
export class FailureDirective {
  #armed: FailStage5Mode | null = null;

  arm(mode: FailStage5Mode): void {
    this.#armed = mode;
  }

  /** Returns the armed mode (if any) and disarms it. */
  consume(): FailStage5Mode | null {
    const mode = this.#armed;
    this.#armed = null;
    return mode;
  }
}
