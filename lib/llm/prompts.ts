// The model prompts, in one registry: the four extractors, stage 5's pair resolver and the
// producer's concept drafter and the bid-worker's two (form questions, answer drafts). A
// prompt's version is part of every memo key of its
// extractor: editing the text without bumping the version would serve stale memos, so the
// version is derived from the text itself.

import type { TSchema } from '@sinclair/typebox';
import { sha256Hex } from '../hash.ts';
import {
  ClassificationSchema,
  EntitiesSchema,
  QaSchema,
  RelationshipsSchema,
  TAXONOMY,
  ENTITY_TYPES,
  PairResolutionSchema,
  ConceptDraftSchema,
  FormQuestionsSchema,
  AnswerDraftSchema,
  ANSWER_KINDS,
} from './schemas.ts';

export type ExtractorName = 'classification' | 'qa' | 'entities' | 'relationships';
export type PromptName = ExtractorName | 'pair_resolver' | 'producer' | 'form_questions' | 'answer_draft';

export interface ExtractorPrompt {
  name: PromptName;
  /** The tool the model must call; its input_schema is `schema`. */
  tool: string;
  description: string;
  system: string;
  schema: TSchema;
  version: string;
}

function prompt(name: PromptName, tool: string, description: string, schema: TSchema, system: string): ExtractorPrompt {
  const version = sha256Hex(system + JSON.stringify(schema)).slice(0, 12);
  return Object.freeze({ name, tool, description, system, schema, version });
}

export const PROMPTS: Readonly<Record<PromptName, ExtractorPrompt>> = Object.freeze({
  classification: prompt(
    'classification',
    'record_classification',
    'Record the document classification.',
    ClassificationSchema,
    `You classify business documents. Read the document and call record_classification with a label ` +
      `from this taxonomy: ${TAXONOMY.join(', ')}; a confidence between 0 and 1; and up to ten short ` +
      `topics. Use only the document's content.`,
  ),
  qa: prompt(
    'qa',
    'record_qa_pairs',
    'Record the question and answer pairs.',
    QaSchema,
    'You extract question and answer pairs from documents such as FAQs, forms and questionnaires. ' +
      'Call record_qa_pairs with every question in document order and its answer exactly as written; ' +
      'use null when a question has no answer. Do not invent questions.',
  ),
  entities: prompt(
    'entities',
    'record_entities',
    'Record the named entities.',
    EntitiesSchema,
    `You extract named entities. Call record_entities with every person, organization, location, ` +
      `product or event the document names: its surface form as written, a canonical name (full, ` +
      `consistently spelled), a type from ${ENTITY_TYPES.join(', ')}, and a confidence between 0 and 1.`,
  ),
  relationships: prompt(
    'relationships',
    'record_relationships',
    'Record the relationships between entities.',
    RelationshipsSchema,
    'You extract relationships between named entities. Call record_relationships with each ' +
      'relationship the document states: source and target as canonical entity names, a snake_case ' +
      'predicate such as works_for, founded, partner_of or located_in, and a confidence between 0 and ' +
      '1.',
  ),
  pair_resolver: prompt(
    'pair_resolver',
    'record_match',
    'Record which candidate names the same entity.',
    PairResolutionSchema,
    'You resolve entity names. The message gives an entity type, a name found in a document, and ' +
      'numbered candidate names already known, each with its type. Call record_match with the number ' +
      'of the candidate that names the same real-world entity (a variant spelling, abbreviation, ' +
      'legal form, title or typo of it), or null when none does; and a confidence between 0 and 1. ' +
      'A candidate of another type matches only when the name is that entity given the wrong type ' +
      '(choosing it gives the name its type); two things of different kinds that share a name (a ' +
      'person and a country called Jordan) are not a match, nor are similar names of different ' +
      'entities (another branch, another person with the same surname).',
  ),
  producer: prompt(
    'producer',
    'record_concept',
    'Record the drafted concept page.',
    ConceptDraftSchema,
    'You write one page of a knowledge base about a concept (a named entity or a topic) from the ' +
      'evidence given: numbered sources with excerpts, relationships and answered questions, each ' +
      'marked with the numbers of the sources it comes from. Call record_concept with a one-sentence ' +
      'description and a few short sections of claims. Every claim states only what the evidence ' +
      'says and lists the numbers of the sources that support it; leave out anything no source ' +
      'supports. Write plainly, in the language of the sources.',
  ),
  form_questions: prompt(
    'form_questions',
    'record_form_questions',
    'Record the questions of the form.',
    FormQuestionsSchema,
    'You analyse bid and tender questionnaires. The message lists the blocks of a form, one per ' +
      'line, each as [address] followed by its text. Call record_form_questions with every question ' +
      'the form asks its reader to answer, in document order: the address of the block that holds ' +
      `it, the question text as written, the kind of answer expected (${ANSWER_KINDS.join(', ')}), ` +
      'whether an answer is required (true unless the form marks it optional), and the heading of ' +
      'the section it is in, or null. Headings, instructions and answers already given are not ' +
      'questions. Do not invent questions.',
  ),
  answer_draft: prompt(
    'answer_draft',
    'record_answer',
    'Record the drafted answer.',
    AnswerDraftSchema,
    "You draft answers to bid and tender questions from the organisation's own records. The " +
      'message gives a question and numbered evidence from those records. Call record_answer with ' +
      'an answer grounded only in the evidence, the numbers of the evidence it rests on, and a ' +
      'confidence between 0 and 1. When the evidence does not answer the question, set answer to ' +
      'null, cite nothing and give confidence 0: never invent an answer.',
  ),
});
