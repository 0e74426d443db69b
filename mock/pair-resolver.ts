// The mock's pair resolver (stage 5 i): it decides from the names alone, deterministically, so
// the resolution figures of the offline benchmark mean something. Its rule is its own, not the
// resolver's blocking: case, punctuation, legal forms and titles aside, a candidate matches
// when it is at most one edit per eight letters away (at least one), the closest one winning.
// A candidate of another type matches only when its spelling shows its type and the name's
// shows none (mock/names.ts: typeEvidence): "Northwind Tradres", guessed a person, is the
// organisation Northwind Traders misspelt; a person and a country both called Jordan, whose
// names show nothing, stay apart.

import { HONORIFICS, LEGAL_FORMS } from '../lib/name-words.ts';
import type { PairResolution } from '../lib/llm/schemas.ts';
import { typeEvidence } from './names.ts';

const plain = (name: string) =>
  name
    .toLowerCase()
    .replace(/\./g, '')
    .replace(/[^a-z0-9 ]+/g, ' ')
    .split(' ')
    .filter((w) => w !== '' && !LEGAL_FORMS.has(w) && !HONORIFICS.has(w))
    .join(' ');

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The request as stages/resolve/pair-resolver.ts writes it: "Type: ...", "Name: ..." and
 * numbered "n. candidate (type)" lines.
 */
export function resolvePair(text: string): PairResolution {
  const type = /^Type: (.*)$/m.exec(text)?.[1] ?? '';
  const given = /^Name: (.*)$/m.exec(text)?.[1] ?? '';
  const name = plain(given);
  const candidates = [...text.matchAll(/^(\d+)\. (.*) \(([a-z]+)\)$/gm)].map((m) => ({
    n: Number(m[1]),
    name: m[2]!,
    type: m[3]!,
  }));
  const allowed = Math.max(1, Math.floor(name.length / 8));
  const typeFits = (c: { name: string; type: string }) =>
    c.type === type || (typeEvidence(c.name) === c.type && typeEvidence(given) === null);
  let best: { n: number; distance: number } | null = null;
  for (const c of candidates.filter(typeFits)) {
    const distance = editDistance(name, plain(c.name));
    if (distance <= allowed && (best === null || distance < best.distance)) best = { n: c.n, distance };
  }
  return best === null
    ? { match: null, confidence: 0.8 }
    : { match: best.n, confidence: best.distance === 0 ? 0.95 : 0.8 };
}
