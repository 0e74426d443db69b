// The extractors' output schemas (docs/behaviour/stages.md#stage-3-llm-extraction). Each TypeBox
// schema is at once the TypeScript type, the JSON Schema that ajv validates against, and the tool
// input_schema the model is asked to fill, so the three can never drift apart.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

/** The classification taxonomy; a label outside it is kept but counted as taxonomy_miss. */
export const TAXONOMY = Object.freeze([
  'policy',
  'procedure',
  'report',
  'faq',
  'contract',
  'form',
  'reference',
  'correspondence',
  'news',
  'other',
] as const);

export const ENTITY_TYPES = Object.freeze(['person', 'organization', 'location', 'product', 'event', 'other'] as const);

const Confidence = Type.Number({ minimum: 0, maximum: 1 });

export const ClassificationSchema = Type.Object(
  {
    label: Type.String({ minLength: 1, description: `one of: ${TAXONOMY.join(', ')}` }),
    confidence: Confidence,
    topics: Type.Array(Type.String({ minLength: 1 }), { maxItems: 10 }),
  },
  { additionalProperties: false },
);

export const QaSchema = Type.Object(
  {
    pairs: Type.Array(
      Type.Object(
        {
          question: Type.String({ minLength: 1 }),
          // NULL is a legal result: a form question left blank
          // (docs/behaviour/stages.md#blank-form-gate).
          answer: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const EntitiesSchema = Type.Object(
  {
    entities: Type.Array(
      Type.Object(
        {
          surface_form: Type.String({ minLength: 1 }),
          canonical_name: Type.String({ minLength: 1 }),
          type: Type.Union(ENTITY_TYPES.map((t) => Type.Literal(t))),
          confidence: Confidence,
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const RelationshipsSchema = Type.Object(
  {
    relationships: Type.Array(
      Type.Object(
        {
          source: Type.String({ minLength: 1 }),
          predicate: Type.String({ pattern: '^[a-z][a-z0-9_]*$' }),
          target: Type.String({ minLength: 1 }),
          confidence: Confidence,
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The pair resolver's answer: which candidate names the same entity as the name, if any. */
export const PairResolutionSchema = Type.Object(
  {
    match: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
    confidence: Confidence,
  },
  { additionalProperties: false },
);

/**
 * The producer's draft of one concept (stages/producer/): a one-sentence description and
 * sections of claims, each citing the numbered sources of the evidence it was shown. The
 * numbers are checked against the evidence after validation (stages/producer/draft.ts).
 */
export const ConceptDraftSchema = Type.Object(
  {
    description: Type.String({ minLength: 1, maxLength: 400 }),
    sections: Type.Array(
      Type.Object(
        {
          heading: Type.String({ minLength: 1, maxLength: 120 }),
          claims: Type.Array(
            Type.Object(
              {
                text: Type.String({ minLength: 1, maxLength: 2000 }),
                sources: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 20 }),
              },
              { additionalProperties: false },
            ),
            { minItems: 1, maxItems: 40 },
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 12 },
    ),
  },
  { additionalProperties: false },
);

/** The kinds of answer a form question expects. */
export const ANSWER_KINDS = Object.freeze([
  'short_text',
  'long_text',
  'yes_no',
  'number',
  'date',
  'choice',
  'file',
] as const);

/** The bid-worker's analyse_form: the questions of a form, each at the block that holds it. */
export const FormQuestionsSchema = Type.Object(
  {
    questions: Type.Array(
      Type.Object(
        {
          block: Type.String({ minLength: 1, description: 'the address of the block holding the question' }),
          text: Type.String({ minLength: 1 }),
          answer_kind: Type.Union(ANSWER_KINDS.map((k) => Type.Literal(k))),
          required: Type.Boolean(),
          section: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The bid-worker's template_fill: a drafted answer citing numbered evidence, or null for none. */
export const AnswerDraftSchema = Type.Object(
  {
    answer: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    citations: Type.Array(Type.Integer({ minimum: 1 })),
    confidence: Confidence,
  },
  { additionalProperties: false },
);

export type Classification = Static<typeof ClassificationSchema>;
export type FormQuestions = Static<typeof FormQuestionsSchema>;
export type AnswerDraft = Static<typeof AnswerDraftSchema>;
export type QaPairs = Static<typeof QaSchema>;
export type Entities = Static<typeof EntitiesSchema>;
export type Relationships = Static<typeof RelationshipsSchema>;
export type PairResolution = Static<typeof PairResolutionSchema>;
export type ConceptDraft = Static<typeof ConceptDraftSchema>;

const ajv = new Ajv({ allErrors: true, strict: true });

export interface Validator<T> {
  (value: unknown): value is T;
  /** The last failure, as a message fit to send back to the model. */
  explain(): string;
}

export function validator<S extends TSchema>(schema: S): Validator<Static<S>> {
  const compiled: ValidateFunction = ajv.compile(schema);
  const check = ((value: unknown) => compiled(value)) as Validator<Static<S>>;
  check.explain = () =>
    (compiled.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');
  return check;
}
