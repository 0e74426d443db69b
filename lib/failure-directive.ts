// The one-shot stage-5 failure directive (docs/behaviour/states.md#failure-directive): for exactly
// one walk, the credentials of the chosen mode are replaced by a non-empty invalid sentinel (empty
// values would be scrubbed before the client is built), and restored in every outcome.

export const FAIL_STAGE5_MODES = Object.freeze(['embedder', 'pair_resolver'] as const);
export type FailStage5Mode = (typeof FAIL_STAGE5_MODES)[number];

/** The credential swapped in; the mock model server refuses it with 401 like a dead key. */
export const FAILURE_SENTINEL = 'ingest-failure-injection-sentinel';

const CREDENTIALS: Readonly<Record<FailStage5Mode, readonly string[]>> = {
  embedder: ['OPENAI_API_KEY'],
  pair_resolver: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],
};

/** Runs `work` with the mode's credentials swapped for the sentinel, restoring them after. */
export async function withFailureInjection<T>(mode: FailStage5Mode | null, work: () => Promise<T>): Promise<T> {
  if (mode === null) return work();
  const env = process.env;
  const saved = CREDENTIALS[mode].map((name) => [name, env[name]] as const);
  for (const [name] of saved) env[name] = FAILURE_SENTINEL;
  try {
    return await work();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
  }
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
