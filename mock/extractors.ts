// Canned answers for the registered extractor prompts, built from the request's text so
// they vary plausibly per document, and revalidated against the real schemas when this
// module loads: a schema change that the mock no longer satisfies fails at boot, not mid-walk.
// Canned output exercises the wiring; it does not judge extraction quality
// (docs/behaviour/tiers.md#mock-server-contract).

import { PROMPTS, type PromptName } from '../lib/llm/prompts.ts';
import {
  ClassificationSchema,
  ConceptDraftSchema,
  EntitiesSchema,
  PairResolutionSchema,
  QaSchema,
  RelationshipsSchema,
  FormQuestionsSchema,
  AnswerDraftSchema,
  TAXONOMY,
  validator,
  type Classification,
  type Entities,
  type QaPairs,
  type Relationships,
} from '../lib/llm/schemas.ts';
import type { MessagesRequest, PromptResponder } from './messages.ts';
import { entityType, names } from './names.ts';
import { resolvePair } from './pair-resolver.ts';
import { draftConcept, SAMPLE_EVIDENCE } from './producer.ts';
import { answerDraft, formQuestions } from './forms.ts';

function documentText(request: MessagesRequest): string {
  const first = request.messages[0]?.content;
  if (typeof first === 'string') return first;
  return (first ?? []).map((block) => block.text ?? '').join('\n');
}

const KEYWORDS: [RegExp, (typeof TAXONOMY)[number]][] = [
  [/\bQ:|\bFAQ\b|frequently asked/i, 'faq'],
  [/\bpolicy\b/i, 'policy'],
  [/\breport\b/i, 'report'],
  [/\bprice|invoice|contract\b/i, 'contract'],
  [/\bguide|onboarding|how to\b/i, 'procedure'],
  [/\bnews|opened|announced\b/i, 'news'],
];

export function classify(text: string): Classification {
  const label = KEYWORDS.find(([pattern]) => pattern.test(text))?.[1] ?? 'reference';
  const topics = [...new Set(names(text).map((n) => n.toLowerCase()))].slice(0, 5);
  return { label, confidence: 0.8, topics };
}

export function qaPairs(text: string): QaPairs {
  const pairs: QaPairs['pairs'] = [];
  const pattern = /^Q:\s*(.+?)\s*\n\s*A:[ \t]*(.*)$/gm;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const answer = m[2]!.trim();
    pairs.push({ question: m[1]!.trim(), answer: answer === '' ? null : answer });
  }
  return { pairs };
}

export function entities(text: string): Entities {
  const seen = new Map<string, Entities['entities'][number]>();
  for (const name of names(text)) {
    if (seen.has(name)) continue;
    seen.set(name, {
      surface_form: name,
      canonical_name: name,
      type: entityType(name),
      confidence: 0.7,
    });
  }
  return { entities: [...seen.values()] };
}

export function relationships(text: string): Relationships {
  const out = new Map<string, Relationships['relationships'][number]>();
  for (const sentence of text.split(/(?<=[.!?])\s+/)) {
    const found = [...new Set(names(sentence))];
    for (let i = 0; i + 1 < found.length; i++) {
      const relation = { source: found[i]!, predicate: 'mentioned_with', target: found[i + 1]!, confidence: 0.5 };
      out.set(`${relation.source}|${relation.target}`, relation);
    }
  }
  return { relationships: [...out.values()] };
}

const BUILDERS: Record<PromptName, (text: string) => unknown> = {
  classification: classify,
  qa: qaPairs,
  entities,
  relationships,
  pair_resolver: resolvePair,
  producer: draftConcept,
  form_questions: formQuestions,
  answer_draft: answerDraft,
};
const SCHEMAS = {
  classification: ClassificationSchema,
  qa: QaSchema,
  entities: EntitiesSchema,
  relationships: RelationshipsSchema,
  pair_resolver: PairResolutionSchema,
  producer: ConceptDraftSchema,
  form_questions: FormQuestionsSchema,
  answer_draft: AnswerDraftSchema,
};

// Revalidate the canned payloads against the real schemas now, at import.
const SAMPLE =
  'Q: Who founded Northwind Traders?\nA: Ada Lovelace founded Northwind Traders with Grace Hopper.\n\nQ: Blank?\nA:\n' +
  '[p0] Section 1: Company\n[p1] Who founded the company?\n[1] (q_a_pair, score 0.9) Q: Who? A: Ada.\n';
for (const name of Object.keys(BUILDERS) as PromptName[]) {
  const valid = validator(SCHEMAS[name]);
  if (!valid(BUILDERS[name](name === 'producer' ? SAMPLE_EVIDENCE : SAMPLE)))
    throw new Error(`mock model server: canned ${name} output no longer fits its schema: ${valid.explain()}`);
}

/** The registry the mock serves: each registered prompt's exact system text -> its canned answer. */
export const EXTRACTOR_RESPONDERS: ReadonlyMap<string, PromptResponder> = new Map(
  (Object.keys(BUILDERS) as PromptName[]).map((name) => [
    PROMPTS[name].system,
    (request: MessagesRequest) => BUILDERS[name](documentText(request)),
  ]),
);
