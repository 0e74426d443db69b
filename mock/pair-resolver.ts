// The mock's pair resolver (stage 5 i): it decides from the names alone, deterministically, so
// the resolution figures of the offline benchmark mean something. Its rule is its own, not the
// resolver's blocking: case, punctuation and legal forms aside, a candidate matches when it is
// at most one edit per eight letters away (at least one), the closest one winning.

import type { PairResolution } from '../lib/llm/schemas.ts';

const LEGAL = /\b(inc|ltd|limited|llc|plc|corp|corporation|company|co|gmbh|sa|ag)\b/g;

const plain = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9 ]+/g, ' ')
    .replace(LEGAL, ' ')
    .replace(/\s+/g, ' ')
    .trim();

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

/** The request as stages/resolve/pair-resolver.ts writes it: "Name: ..." and numbered "n. candidate" lines. */
export function resolvePair(text: string): PairResolution {
  const name = plain(/^Name: (.*)$/m.exec(text)?.[1] ?? '');
  const candidates = [...text.matchAll(/^(\d+)\. (.*)$/gm)].map((m) => ({ n: Number(m[1]), name: plain(m[2]!) }));
  const allowed = Math.max(1, Math.floor(name.length / 8));
  let best: { n: number; distance: number } | null = null;
  for (const c of candidates) {
    const distance = editDistance(name, c.name);
    if (distance <= allowed && (best === null || distance < best.distance)) best = { n: c.n, distance };
  }
  return best === null
    ? { match: null, confidence: 0.8 }
    : { match: best.n, confidence: best.distance === 0 ? 0.95 : 0.8 };
}
