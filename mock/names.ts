// The mock's recognition of names (tier 1), shared by its extractors and its pair resolver:
// deterministic heuristics that give the pipeline plausible names to carry, not a recogniser.
//
//   names   capitalised runs of two or more words on one line, a leading month or weekday
//           left out ("in March Ada Lovelace wrote" names Ada Lovelace)
//   types   an organisation when a word says so (Traders, Bank, ...) or the name ends in a
//           legal form (Acme Corporation, Globex Limited); a person otherwise, the guess
//   evidence the type the spelling itself shows (organisation words or a legal form; a leading
//           title for a person), or none: the pair resolver lets a name of another type join
//           only a root whose spelling shows its type, and only when the name's shows none

import { HONORIFICS, LEGAL_FORMS } from '../lib/name-words.ts';

const MONTHS_AND_WEEKDAYS = new Set(
  (
    'January February March April May June July August September October November December ' +
    'Monday Tuesday Wednesday Thursday Friday Saturday Sunday'
  ).split(' '),
);

/**
 * Capitalised multi-word names on one line. A name never spans a line break, or a heading and
 * the line after it would read as one name ("Contract" + "Northwind Traders"), and a month or
 * weekday before it is the sentence's, not the name's.
 */
export function names(text: string): string[] {
  return [...text.matchAll(/\b([A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+)\b/g)].flatMap((m) => {
    const words = m[1]!.split(/[ \t]+/);
    if (MONTHS_AND_WEEKDAYS.has(words[0]!)) words.shift();
    return words.length > 1 ? [words.join(' ')] : [];
  });
}

const ORGANISATION_WORDS = /\b(Traders|Logistics|Corp|Inc|Ltd|Company|Group|Bank|University)\b/;

/** The type a name's spelling shows, or null when it shows none. */
export function typeEvidence(name: string): 'organization' | 'person' | null {
  const words = name.toLowerCase().replace(/\./g, '').split(/\s+/);
  if (ORGANISATION_WORDS.test(name) || LEGAL_FORMS.has(words.at(-1)!)) return 'organization';
  if (words.length > 1 && HONORIFICS.has(words[0]!)) return 'person';
  return null;
}

/** The mock extractor's type: what the spelling shows, else a person. */
export function entityType(name: string): 'organization' | 'person' {
  return typeEvidence(name) ?? 'person';
}
