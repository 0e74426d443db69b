// Stage 5 (i), the names side of entity resolution: what two spellings of one entity have in
// common. A normalised key (exact block) meets variants of case, width, punctuation, spacing,
// legal form and title; character trigrams meet typos and abbreviations (shingle block); a MinHash
// signature of the trigrams, cut into bands, turns "shares many trigrams" into a few exact
// keys, so candidates are looked up by key, never by scanning every canonical. (What two names
// mean alike is the embedding's part: roots.ts asks the database for the nearest root vectors.)

import { HONORIFICS, LEGAL_FORMS } from '../../lib/name-words.ts';

/** A name's words: lower case, compatibility forms folded, accents and punctuation dropped. */
function wordsOf(name: string): string[] {
  return (
    name
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .replace(/&/g, ' and ')
      // Dots go without a space, so that "S.A." is the legal form "sa" and not two letters.
      .replace(/\./g, '')
      .replace(/[^\p{L}\p{N}]+/gu, ' ')
      .trim()
      .split(' ')
      .filter((w) => w !== '')
  );
}

/**
 * The words that tell the entity: without the legal forms at the end ("Acme Trading Co." and
 * "ACME Trading Company Ltd" are one firm) and the titles at the start ("Dr Jane Smith" and
 * "Jane Smith" are one person), never leaving the name empty.
 */
function coreWords(name: string): { words: string[]; dropped: number } {
  const words = wordsOf(name);
  const all = words.length;
  while (words.length > 1 && LEGAL_FORMS.has(words[words.length - 1]!)) words.pop();
  while (words.length > 1 && HONORIFICS.has(words[0]!)) words.shift();
  return { words, dropped: all - words.length };
}

/** Lower case, compatibility forms folded, accents and punctuation dropped, legal forms and titles cut. */
export function normaliseName(name: string): string {
  return coreWords(name).words.join(' ');
}

/** How many legal-form and title words the normalised name drops: of two spellings, the plainer founds the root. */
export function adornments(name: string): number {
  return coreWords(name).dropped;
}

/** The character trigrams of a normalised name, padded so that its first and last letters count. */
export function trigrams(normalised: string): Set<string> {
  const padded = `  ${normalised} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3));
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const x of a) if (b.has(x)) shared += 1;
  return shared / (a.size + b.size - shared);
}

/**
 * Banding of the MinHash signature: two names whose trigram sets have Jaccard similarity J
 * share at least one band with probability 1 - (1 - J^ROWS)^BANDS: 0.9998 at J = 0.7 (a one-
 * letter typo in a 12-letter name), 0.63 at J = 0.3. Candidates are ranked by their true
 * Jaccard afterwards, so the false ones cost a comparison, not a decision.
 */
export const BANDS = 16;
export const ROWS = 2;

/** 32-bit FNV-1a of a string with a seed: a fixed, portable hash, so band keys are stable on disk. */
function hash32(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // A final avalanche, so that seeds differing in a bit give unrelated permutations.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h >>> 0;
}

/** The band keys of a name's trigram set: BANDS strings, equal for two names that share that band. */
export function bandKeys(grams: ReadonlySet<string>): string[] {
  const keys: string[] = [];
  for (let band = 0; band < BANDS; band++) {
    const mins: number[] = [];
    for (let row = 0; row < ROWS; row++) {
      const seed = band * ROWS + row + 1;
      let min = 0xffffffff;
      for (const gram of grams) min = Math.min(min, hash32(gram, seed));
      mins.push(min);
    }
    keys.push(`t${band}:${mins.map((m) => m.toString(36)).join('.')}`);
  }
  return keys;
}

/**
 * A vector scaled to length 1 (a zero vector stays zero), so that the cosine of two is their dot
 * product (`cosine`): a pass compares each name with hundreds, and a third of the work per pair.
 */
export function unitLength(vector: ArrayLike<number>): Float64Array {
  const unit = Float64Array.from(vector);
  let norm = 0;
  for (let i = 0; i < unit.length; i++) norm += unit[i]! * unit[i]!;
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < unit.length; i++) unit[i]! *= scale;
  }
  return unit;
}

/** Cosine similarity of two vectors of one length at unit length (unitLength). */
export function cosine(a: Float64Array, b: Float64Array): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}
