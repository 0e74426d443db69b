// The walk's in-flight items (config walk.inFlight slots) and the lives that gave their slot up
// to wait for their last rows to land (engine/item/slot.ts). The walk admits no item while every
// slot is taken and another already waits, nor while twice as many lives as slots are unfinished:
// each that waits for its rows holds them in the sink's queue, so their number bounds the walk's
// memory as the slots' does.

import { EventEmitter, once } from 'node:events';
import PQueue from 'p-queue';
import { ItemSlot } from '../item/slot.ts';
import { untilNoneWaiting } from './backpressure.ts';

export class ItemSlots {
  readonly #slots: PQueue;
  readonly #maxLives: number;
  readonly #lives = new Set<Promise<void>>();
  /** Emits 'ended' as each life ends. */
  readonly #events = new EventEmitter();
  /** The first life that rejected, which none should. */
  #failure: { error: unknown } | null = null;

  constructor(inFlight: number) {
    this.#slots = new PQueue({ concurrency: inFlight });
    this.#maxLives = 2 * inFlight;
  }

  /**
   * Resolves once the walk may read on (backpressure); the life then runs in a slot of its own,
   * which it may give up before it ends. `life` should not reject (the walk settles each
   * outcome); if it does, its slot and its place are freed and `ended` rejects with its error.
   */
  async admit(life: (slot: ItemSlot) => Promise<void>): Promise<void> {
    await untilNoneWaiting(this.#slots);
    while (this.#lives.size >= this.#maxLives) await once(this.#events, 'ended');
    void this.#slots.add(async () => {
      const slot = new ItemSlot();
      const lived = life(slot);
      this.#hold(lived);
      // A rejection is heard by `ended`, not here, where it would go unhandled.
      await Promise.race([lived, slot.released]).catch(() => {});
    });
  }

  /** Resolves once every life admitted has ended. */
  async ended(): Promise<void> {
    await this.#slots.onIdle();
    while (this.#lives.size > 0) await Promise.allSettled(this.#lives);
    if (this.#failure !== null) throw this.#failure.error;
  }

  #hold(life: Promise<void>): void {
    this.#lives.add(life);
    // A life that broke its promise and rejected must still leave the set, or `admit` would
    // wait for it for ever; its error is kept for `ended`.
    void life
      .catch((error: unknown) => {
        this.#failure ??= { error };
      })
      .then(() => {
        this.#lives.delete(life);
        this.#events.emit('ended');
      });
  }
}
