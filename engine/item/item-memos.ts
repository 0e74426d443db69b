// An item's inner memo entries (its extractors' outputs) on their way to the state store
// (docs/DECISIONS.md "An item's rows and memos in one transaction"). Where the store lives in the
// database the rows are written to (the database store: every distributed walk, a sidecar
// without a volume), they are held here and written in the transaction of the item's next rows,
// its item memo with the last: an item commits its rows, its answers and its memo together, or
// none of them. Elsewhere (the lmdb store) an entry is written as soon as it is answered: two
// stores share no transaction.
//
// The price of holding them: a process killed in the middle of an item loses the answers it had
// not written yet (a large item, those of its batch in progress), and the redo asks them again.
// An item that fails (rather than a process that dies) writes what it holds on its own
// (keepAnswered), so a document that fails on every walk does not pay every time.

import type { EntriesIn } from '../../lib/db/sink.ts';
import type { MemoWritesIn, StateStore } from '../../lib/state/store.ts';

/** What the extractors read and write of the memo (lib/llm/run-extractor.ts). */
type ExtractorMemos = Pick<StateStore, 'getMemo' | 'putMemo' | 'removeMemo'>;

export class ItemMemos implements ExtractorMemos {
  readonly #store: StateStore;
  /** Entries answered and not yet committed; only where the store writes in the rows' transaction. */
  readonly #held = new Map<string, unknown>();

  constructor(store: StateStore) {
    this.#store = store;
  }

  /** The store's writes on the rows' transaction; undefined where it has none. */
  get writesIn(): MemoWritesIn | undefined {
    return this.#store.inRowsTransaction;
  }

  getMemo(key: string): Promise<unknown> {
    return this.#held.has(key) ? Promise.resolve(this.#held.get(key)) : this.#store.getMemo(key);
  }

  async putMemo(key: string, value: unknown): Promise<void> {
    if (this.writesIn === undefined) return this.#store.putMemo(key, value);
    this.#held.set(key, value);
  }

  /** Removes an entry that did not read back (the extractor's self-heal): at once, held or not. */
  removeMemo(key: string): Promise<void> {
    this.#held.delete(key);
    return this.#store.removeMemo(key);
  }

  /**
   * The entries held now, for the transaction of the rows written next, and what to call once
   * it committed (undefined when none is held): they are held (and read) here until then, so a
   * failed write loses none.
   */
  carried(): { memos: EntriesIn; committed: () => void } | undefined {
    const writer = this.writesIn;
    if (writer === undefined || this.#held.size === 0) return undefined;
    const entries = [...this.#held];
    return {
      memos: { writer, entries },
      committed: () => {
        for (const [key, value] of entries) if (this.#held.get(key) === value) this.#held.delete(key);
      },
    };
  }

  /**
   * Writes what is still held, on its own, once the item has failed: those answers were paid for
   * and are valid whatever became of the item (the lmdb store has them already), so the next walk
   * does not buy them again. Best effort: a store that cannot take them now loses nothing else.
   */
  async keepAnswered(): Promise<void> {
    for (const [key, value] of this.#held) await this.#store.putMemo(key, value).catch(() => {});
    this.#held.clear();
  }
}
