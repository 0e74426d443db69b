// Chunking: converted text -> content_chunks with stable indexes. Pure functions: the whole list,
// or the chunks one at a time for a document too large to hold them all (engine/file.ts).
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
  const target = options.targetChars ?? DEFAULT_TARGET_CHARS;
  const max = Math.max(target, options.maxChars ?? DEFAULT_MAX_CHARS);
  let idx = 0;
  let start = skipWhitespace(text, 0);
  while (start < text.length) {
    const end = text.length - start <= target ? text.length : breakPoint(text, start, target, max);
    const trimmedEnd = trimEnd(text, start, end);
    if (trimmedEnd > start) {
      yield { idx, text: text.slice(start, trimmedEnd), charStart: start, charEnd: trimmedEnd };
      idx += 1;
    }
    start = skipWhitespace(text, end);
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
