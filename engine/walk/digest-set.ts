// A set of strings that keeps only a 64-bit digest of each. A walk remembers every item it
// enumerated and every document they resolve to until its cleanup pass. As strings in two Sets
// that cost about 600 bytes per document (59 MB of heap at 100,000 documents, measured); as
// digests in a typed array, 16 to 32 bytes per entry (both sets: 4 MB).
//
// Membership is by digest, so two strings may share one: for a million entries the chance
// that any string not added is reported present is about 3 in 100 million. The digest is a
// multiply-xor hash (not a keyed or cryptographic one: sha256 through node:crypto costs 1.5 us
// a call, which an unchanged walk of 15 us per file pays twice). Use it only where a false
// "present" costs little (the cleanup pass: a vanished document's rows left in place), never
// to decide that something exists.

const INITIAL_SLOTS = 4096;

/** Two independent 32-bit multiply-xor lanes over the UTF-16 code units, cross-mixed at the end. */
function digest(value: string): [hi: number, lo: number] {
  let a = 0x9e3779b9 ^ value.length;
  let b = 0x85ebca6b ^ value.length;
  for (let i = 0; i < value.length; i += 1) {
    const unit = value.charCodeAt(i);
    a = Math.imul(a ^ unit, 0x9e3779b1);
    b = Math.imul(b ^ unit, 0x5bd1e995);
  }
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b) ^ Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  b = Math.imul(b ^ (b >>> 16), 0x85ebca6b) ^ Math.imul(a ^ (a >>> 13), 0xc2b2ae35);
  a ^= a >>> 16;
  b ^= b >>> 16;
  // (0, 0) marks an empty slot.
  return [a >>> 0, b >>> 0 || 1];
}

export class DigestSet {
  /** Open addressing, linear probing: slot i is (hi, lo) at 2i, 2i + 1. */
  #slots = new Uint32Array(2 * INITIAL_SLOTS);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(value: string): this {
    const [hi, lo] = digest(value);
    if (this.#insert(hi, lo)) {
      this.#size += 1;
      // At most half full keeps probes short.
      if (this.#size * 4 > this.#slots.length) this.#grow();
    }
    return this;
  }

  has(value: string): boolean {
    const [hi, lo] = digest(value);
    return this.#slots[2 * this.#slotOf(hi, lo) + 1] !== 0;
  }

  /** Places a digest; false when it was already there. */
  #insert(hi: number, lo: number): boolean {
    const i = this.#slotOf(hi, lo);
    if (this.#slots[2 * i + 1] !== 0) return false;
    this.#slots[2 * i] = hi;
    this.#slots[2 * i + 1] = lo;
    return true;
  }

  /** The slot that holds the digest, or the empty one where it would go. */
  #slotOf(hi: number, lo: number): number {
    const slots = this.#slots;
    const mask = slots.length / 2 - 1;
    let i = hi & mask;
    while (slots[2 * i + 1] !== 0 && !(slots[2 * i] === hi && slots[2 * i + 1] === lo)) i = (i + 1) & mask;
    return i;
  }

  #grow(): void {
    const old = this.#slots;
    this.#slots = new Uint32Array(old.length * 2);
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== 0) this.#insert(old[i]!, old[i + 1]!);
  }
}
