// The mock's concept drafter (the producer, stages/producer/): a page built from the evidence
// alone, deterministically, every claim citing the source it was taken from, so the bundle's
// citations mean something on tier 1. It reads the evidence as stages/producer/evidence.ts
// writes it: "Concept: ...", "Named in N sources", numbered "[n] title" lines each followed by
// "Excerpt: ...", and "- ... [n]" lines under "Relationships:" and "Answered questions:".

import type { ConceptDraft } from '../lib/llm/schemas.ts';

type Section = ConceptDraft['sections'][number];

/** The first sentence of `text` that names `name`, else its opening, within 300 characters. */
function sentenceNaming(text: string, name: string): string {
  const sentences = text.split(/(?<=[.!?])\s+/);
  const found = sentences.find((s) => s.includes(name)) ?? sentences[0] ?? text;
  return found.length > 300 ? `${found.slice(0, 297)}...` : found;
}

/** "- statement [1, 2]" lines of the block headed `heading`, as claims. */
function listedClaims(text: string, heading: string): Section['claims'] {
  const block = new RegExp(`^${heading}:\\n((?:- .*\\n?)*)`, 'm').exec(text)?.[1] ?? '';
  return [...block.matchAll(/^- (.*) \[([\d, ]+)\]$/gm)].map((m) => ({
    text: m[1]!,
    sources: m[2]!.split(',').map((n) => Number(n.trim())),
  }));
}

export function draftConcept(text: string): ConceptDraft {
  const name = /^Concept: (.*)$/m.exec(text)?.[1] ?? 'the concept';
  const named = /^Named in (\d+) sources?/m.exec(text)?.[1] ?? '0';
  const excerpts = [...text.matchAll(/^\[(\d+)\] .*\nExcerpt: (.*)$/gm)].map((m) => ({
    text: sentenceNaming(m[2]!, name),
    sources: [Number(m[1])],
  }));
  const sections: Section[] = [
    { heading: 'In the sources', claims: excerpts },
    { heading: 'Relationships', claims: listedClaims(text, 'Relationships') },
    { heading: 'Answered questions', claims: listedClaims(text, 'Answered questions') },
  ].filter((s) => s.claims.length > 0);
  return {
    description: `${name} is named in ${named} sources of the corpus.`,
    sections: sections.length > 0 ? sections : [{ heading: 'In the sources', claims: [{ text: name, sources: [1] }] }],
  };
}

/** Evidence in the drafter's format, for the mock's check of its own output at import. */
export const SAMPLE_EVIDENCE =
  'Concept: Northwind Traders\nKind: organization\nNamed in 2 sources; 2 are numbered below.\n\nSources:\n' +
  '[1] "Launch" (news/launch.md)\nExcerpt: Northwind Traders opened a shop in Lyon.\n' +
  '[2] "Founders" (people.md)\nExcerpt: Ada Lovelace founded Northwind Traders.\n\n' +
  'Relationships:\n- Ada Lovelace founded Northwind Traders [2]\n';
