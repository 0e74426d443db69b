// What the producer owes (docs/DECISIONS.md "What the producer owes (issue 41)"): a record in
// the state store that rows were written which no completed producer run has read. A walk
// incurs it before the memo of its first change is committed, so a walk killed at any later
// instant (in stage 5, in the cleanup, before it could chain a run) leaves it behind, and so
// does a walk that failed; a producer run settles it when it completes, unless it was incurred
// again while the run went. A token, not a list of documents: the run's delta gate finds what
// moved from the rows themselves (stages/producer/concepts.ts); the record only says a run is due.

import { randomUUID } from 'node:crypto';
import type { StateStore } from './store.ts';

/** The memo's name from when only a completed walk wrote it: a request left by an older build still counts. */
export const OWED_MEMO = 'producer:wanted';

export class ProducerDebt {
  readonly #store: StateStore;

  constructor(store: StateStore) {
    this.#store = store;
  }

  /** The token of what is owed; undefined when every change has been produced. */
  async owed(): Promise<string | undefined> {
    const token = await this.#store.getMemo(OWED_MEMO);
    return typeof token === 'string' ? token : undefined;
  }

  /** Records that a run is due, under a fresh token; resolves once it is durable. */
  incur(): Promise<void> {
    return this.#store.putMemo(OWED_MEMO, randomUUID());
  }

  /** Settles what `token` named (read when the run began), unless more was incurred since. */
  async settle(token: string | undefined): Promise<void> {
    if (token !== undefined && (await this.owed()) === token) await this.#store.removeMemo(OWED_MEMO);
  }
}

/** One walk's share: the debt incurred once, at the walk's first change, before its memo. */
export class WalkDebt {
  readonly #debt: ProducerDebt;
  #incurred: Promise<void> | null = null;

  constructor(debt: ProducerDebt) {
    this.#debt = debt;
  }

  incurOnce(): Promise<void> {
    this.#incurred ??= this.#debt.incur().catch((error: unknown) => {
      this.#incurred = null;
      throw error;
    });
    return this.#incurred;
  }
}
