// Deterministic text of any length, a paragraph at a time: prose with names (the mock's
// entities), sentences naming two (its relationships) and a Q&A pair every seventh paragraph.
// The large-item benchmark writes megabytes of it; test/large-item.test.ts a few hundred KB.

import { documentRandom, trueEntities } from './generate.ts';

const WORDS =
  'the a of to and in for on with by from shipment order invoice review team plan budget quarter customer supplier warehouse route contract policy process target delivery schedule risk audit report update approval meeting price volume account region partner market'.split(
    ' ',
  );

/** Endless paragraphs, each ending in a blank line; the same seed gives the same text. */
export function* largeTextParagraphs(seed: number): Generator<string, never, undefined> {
  const random = documentRandom(seed, 0);
  const names = trueEntities().map((e) => e.entity);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const sentence = (): string => {
    const words = Array.from({ length: 8 + Math.floor(random() * 12) }, () => pick(WORDS));
    const roll = random();
    if (roll < 0.3) words.splice(Math.floor(random() * words.length), 0, pick(names));
    if (roll < 0.1) words.push('with', pick(names));
    const text = words.join(' ');
    return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
  };
  for (let paragraph = 0; ; paragraph++) {
    let text = Array.from({ length: 3 + Math.floor(random() * 6) }, sentence).join(' ');
    if (paragraph % 7 === 6) text += `\n\nQ: ${sentence().slice(0, -1)}?\nA: ${sentence()}`;
    yield `${text}\n\n`;
  }
}

/** The first paragraphs of the text, at least `chars` characters of them. */
export function largeText(seed: number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (const paragraph of largeTextParagraphs(seed)) {
    if (length >= chars) break;
    parts.push(paragraph);
    length += paragraph.length;
  }
  return parts.join('');
}
