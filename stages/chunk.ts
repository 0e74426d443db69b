// Chunking: converted text -> content_chunks with stable indexes: the whole list, the chunks one
// at a time for a document too large to hold them all, or the chunks of a text that arrives in
// pieces (ChunkStream: a large text file decoded as it is read, engine/item/file.ts).
//
// Sizes: chunks aim at `targetChars` (1,200) and never exceed `maxChars` (2,000) characters
// (UTF-16 code units). 2,000 characters is at most ~1,000 tokens even for dense scripts, far
// under the embedding model's 8,192-token input limit, and small enough that a Q&A answer or
// an entity mention is retrieved with its context rather than a whole section.
//
// Packing is greedy, left to right: each chunk ends at the best break at or before the
// target (a blank line, else a line break, else a sentence end, else a space), or, with no
// break in reach, at maxChars, backed off so that no surrogate pair is split. So a chunk
// depends only on the text before its end: an edit near the end of a document leaves the
// earlier chunks, and their keys, unchanged.
//
// Every chunk is an exact slice of the input (`text.slice(charStart, charEnd) === chunk.text`);
// whitespace between chunks belongs to no chunk, and whitespace-only stretches yield none.

export interface Chunk {
  idx: number;
  text: string;
  charStart: number;
  charEnd: number;
}

export interface ChunkOptions {
  targetChars?: number;
  maxChars?: number;
}

export const DEFAULT_TARGET_CHARS = 1_200;
export const DEFAULT_MAX_CHARS = 2_000;

// Breaks in order of preference; each matches the separator that ends a chunk.
const BREAKS = [/\n[ \t]*\n\s*/g, /\n\s*/g, /[.!?\u3002\uff01\uff1f]["')\]\u201d\u2019]*\s+/gu, /\s+/g];

export function chunkText(text: string, options: ChunkOptions = {}): Chunk[] {
  return Array.from(chunksOf(text, options));
}

/** The chunks of `text` one at a time, so that a large document's are never all held at once. */
export function* chunksOf(text: string, options: ChunkOptions = {}): Generator<Chunk, void, undefined> {
  const stream = new ChunkStream(options);
  yield* stream.push(text);
  yield* stream.end();
}

/**
 * The chunks of a text that arrives in pieces (a large file decoded as it is read), exactly
 * those of the whole text: a chunk is cut only once the text holds more than `maxChars` past its
 * start (all the packing looks at) or has ended, so where the pieces split the text never shows.
 * What it holds is the text from the start of the next chunk on: at most `maxChars` and a piece.
 */
export class ChunkStream {
  readonly #target: number;
  readonly #max: number;
  /** The text not yet chunked, from offset #base of the whole text. */
  #pending = '';
  #base = 0;
  /** Whitespace at the start of #pending is skipped before the next chunk starts. */
  #skipping = true;
  #idx = 0;
  #ended = false;

  constructor(options: ChunkOptions = {}) {
    this.#target = options.targetChars ?? DEFAULT_TARGET_CHARS;
    this.#max = Math.max(this.#target, options.maxChars ?? DEFAULT_MAX_CHARS);
  }

  /** Characters of text pushed so far. */
  get length(): number {
    return this.#base + this.#pending.length;
  }

  /** Takes the next piece of text; yields the chunks it makes final (drain them before the next push). */
  push(piece: string): Generator<Chunk, void, undefined> {
    if (this.#ended) throw new Error('the text has ended');
    this.#pending += piece;
    return this.#cut();
  }

  /** The text has ended: yields the chunks left. */
  end(): Generator<Chunk, void, undefined> {
    this.#ended = true;
    return this.#cut();
  }

  *#cut(): Generator<Chunk, void, undefined> {
    const text = this.#pending;
    let start = 0;
    for (;;) {
      if (this.#skipping) {
        start = skipWhitespace(text, start);
        if (start === text.length && !this.#ended) break;
        this.#skipping = false;
      }
      if (start >= text.length) break;
      const rest = text.length - start;
      // Not ended: more than max is held, so the text goes on past the target and the whole
      // look-ahead window is here.
      if (!this.#ended && rest <= this.#max) break;
      const end = rest <= this.#target ? text.length : breakPoint(text, start, this.#target, this.#max);
      const trimmedEnd = trimEnd(text, start, end);
      if (trimmedEnd > start) {
        const charStart = this.#base + start;
        yield { idx: this.#idx, text: text.slice(start, trimmedEnd), charStart, charEnd: this.#base + trimmedEnd };
        this.#idx += 1;
      }
      start = end;
      this.#skipping = true;
    }
    // Nothing before the next chunk's start is looked at again.
    this.#pending = text.slice(start);
    this.#base += start;
  }
}

/** Where the chunk starting at `start` ends: after the best separator in (start, start + max]. */
function breakPoint(text: string, start: number, target: number, max: number): number {
  const window = text.slice(start, start + max);
  for (const pattern of BREAKS) {
    // The last separator that ends by the target; failing that, the first one after it.
    let best = -1;
    let firstAfterTarget = -1;
    pattern.lastIndex = 0;
    for (let m = pattern.exec(window); m !== null; m = pattern.exec(window)) {
      const end = m.index + m[0].length;
      if (m.index === 0) continue;
      if (end <= target) best = end;
      else {
        firstAfterTarget = end;
        break;
      }
    }
    const chosen = best > 0 ? best : firstAfterTarget;
    if (chosen > 0 && chosen <= max) return start + chosen;
  }
  return start + hardCut(window, max);
}

/** A cut at `max` that does not separate a surrogate pair. */
function hardCut(window: string, max: number): number {
  const cut = Math.min(max, window.length);
  const before = window.charCodeAt(cut - 1);
  return before >= 0xd800 && before <= 0xdbff ? cut - 1 : cut;
}

function skipWhitespace(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i]!)) i += 1;
  return i;
}

function trimEnd(text: string, start: number, end: number): number {
  while (end > start && /\s/.test(text[end - 1]!)) end -= 1;
  return end;
}
