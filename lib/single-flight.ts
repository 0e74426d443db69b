// One run at a time, refused rather than queued (docs/behaviour/limits.md#walk-limits: one walk at
// a time, one producer pass at a time, each under its own lock). The refusal is thrown
// synchronously, before any of the work starts, so a route can answer 409 while the accepted run
// goes on in the background.

export class SingleFlight {
  #running = false;
  readonly #busyError: () => Error;

  constructor(busyError: () => Error) {
    this.#busyError = busyError;
  }

  get running(): boolean {
    return this.#running;
  }

  /** Starts fn when nothing runs, and holds the lock until its promise settles; else throws busyError(). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running) throw this.#busyError();
    this.#running = true;
    try {
      return fn().finally(() => {
        this.#running = false;
      });
    } catch (error) {
      this.#running = false;
      throw error;
    }
  }
}
