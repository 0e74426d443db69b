// The engine thread's writes in turn (engine/thread/thread.ts): a merge waits for the walk in
// progress, the next walk for it, and shutdown for the last of them. The turn in progress is
// this object's, owned by the thread that takes turns, rather than a module variable.

export class WriteTurns {
  #last: Promise<void> = Promise.resolve();

  /** Runs `write` once every write queued before it has finished. */
  queue(write: () => Promise<void>): void {
    this.#last = this.#last.then(write);
  }

  /** Settles once every write queued so far has finished. */
  idle(): Promise<void> {
    return this.#last;
  }
}
