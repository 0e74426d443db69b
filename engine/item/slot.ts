// An item's place among the walk's in-flight items (engine/walk/walk.ts). The item gives it up
// once all that is left of its life is to wait for its last rows to land (engine/item/commit.ts):
// from then on its rows wait in the sink and the next item converts and extracts in its place
// (docs/DECISIONS.md "Flushes side by side").

export class ItemSlot {
  #release: () => void = () => {};
  /** Resolves when the item gives its place up (perhaps never: an item that fails earlier keeps it to its end). */
  readonly released = new Promise<void>((resolve) => {
    this.#release = resolve;
  });

  release(): void {
    this.#release();
  }
}
