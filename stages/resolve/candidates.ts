// Stage 5 (i), the candidates a name is put to the resolver with: the roots its blocks found in
// the database (roots.ts rootsNear), and the roots this pass founded that a block would find
// (nearness), ranked and cut to MAX_CANDIDATES (rankCandidates).

import { cosine, jaccard, trigrams } from './names.ts';
import { MIN_COSINE, type Near, type Root } from './roots.ts';

export const MAX_CANDIDATES = 5;
/**
 * A root of another type is a candidate only this near: the same normalised name, or trigram
 * Jaccard at least this (a one-letter typo in a two-word name keeps about 0.6 of them). Only
 * the resolver joins it: two things of different kinds may share a name.
 */
export const NEAR_IDENTICAL = 0.5;

/**
 * `other`, a name of this pass, as a candidate of `self` when a block would find it (as
 * rootsNear does): the normalised name or a band shared, or, of the same type, the embeddings
 * near. Null otherwise.
 */
export function nearness(self: Root, other: Root): Near | null {
  // bandKeys gives every name its BANDS keys in band order, and keys of two bands never match.
  const named = other.normalised === self.normalised || other.bands.some((b, band) => b === self.bands[band]);
  // The cosine only where it can count: a name of another type is found by its spelling alone.
  if (!named && other.type !== self.type) return null;
  const similarity = cosine(self.unit, other.unit);
  return named || similarity >= MIN_COSINE
    ? { type: other.type, name: other.name, normalised: other.normalised, cosine: similarity }
    : null;
}

/**
 * The best MAX_CANDIDATES of the roots found for a name: its normalised name first, then by
 * similarity; a root of another type only when its name is near-identical (NEAR_IDENTICAL),
 * and then by the names alone.
 */
export function rankCandidates(self: Root, found: readonly Near[]): Near[] {
  const grams = trigrams(self.normalised);
  const names = (c: Near) => (c.normalised === self.normalised ? 2 : jaccard(grams, trigrams(c.normalised)));
  const score = (c: Near) => (c.type === self.type ? Math.max(names(c), c.cosine) : names(c));
  return [...new Map(found.map((c) => [`${c.type}\u0000${c.name}`, c])).values()]
    .filter((c) => c.type === self.type || names(c) >= NEAR_IDENTICAL)
    .map((c) => ({ c, s: score(c) }))
    .sort((a, b) => b.s - a.s || (a.c.name < b.c.name ? -1 : a.c.name > b.c.name ? 1 : a.c.type < b.c.type ? -1 : 1))
    .slice(0, MAX_CANDIDATES)
    .map(({ c }) => c);
}
