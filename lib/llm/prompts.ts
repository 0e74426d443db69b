// The extractor prompts, in one registry. A prompt's version is part of every memo key of its
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
} from './schemas.ts';

export type ExtractorName = 'classification' | 'qa' | 'entities' | 'relationships';

export interface ExtractorPrompt {
  name: ExtractorName;
  /** The tool the model must call; its input_schema is `schema`. */
  tool: string;
  description: string;
  system: string;
  schema: TSchema;
  version: string;
}

function prompt(
  name: ExtractorName,
  tool: string,
  description: string,
  schema: TSchema,
  system: string,
): ExtractorPrompt {
  const version = sha256Hex(system + JSON.stringify(schema)).slice(0, 12);
  return Object.freeze({ name, tool, description, system, schema, version });
}

export const PROMPTS: Readonly<Record<ExtractorName, ExtractorPrompt>> = Object.freeze({
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
});
