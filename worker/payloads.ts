// The payloads and results of the bid-worker's jobs (docs/DECISIONS.md "The bid-worker"). Each
// TypeBox schema is at once the TypeScript type and the JSON Schema (`ingest jobs schema NAME`
// prints it) that every payload is validated against before a job works: a payload that does
// not fit fails its job with bad_payload, never the worker.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { ANSWER_KINDS, validator } from '../lib/llm/schemas.ts';
import { JobError } from './errors.ts';

const Uuid = Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });

/** Where a form's bytes are: a corpus-relative path, a key of the corpus bucket, or inline. */
export const FormRefSchema = Type.Union([
  Type.Object(
    { path: Type.String({ minLength: 1, maxLength: 1024, description: 'relative to ENGINE_SOURCE_PATH' }) },
    { additionalProperties: false },
  ),
  Type.Object(
    { bucket_key: Type.String({ minLength: 1, maxLength: 1024, description: 'a key of INGEST_CORPUS_BUCKET' }) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      inline: Type.Object(
        {
          filename: Type.String({ minLength: 1, maxLength: 255, description: 'its extension names the type' }),
          base64: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9+/]+={0,2}$' }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
]);

export const AnalyseFormPayloadSchema = Type.Object({ form: FormRefSchema }, { additionalProperties: false });

const EvidenceK = Type.Integer({ minimum: 1, maximum: 50, description: 'evidence per question (default the knob)' });

export const TemplateFillPayloadSchema = Type.Union([
  Type.Object(
    { analysis_job: Uuid, evidence_k: Type.Optional(EvidenceK) },
    { additionalProperties: false, description: 'a done analyse_form job: its form, its questions' },
  ),
  Type.Object(
    { form: FormRefSchema, evidence_k: Type.Optional(EvidenceK) },
    { additionalProperties: false, description: 'a form, analysed first' },
  ),
]);

const Cell = Type.Object(
  { table: Type.Integer({ minimum: 0 }), row: Type.Integer({ minimum: 0 }), cell: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);

/** Where a question sits, and for DOCX cells and XLSX where its answer goes. */
export const QuestionLocationSchema = Type.Union([
  Type.Object(
    { kind: Type.Literal('docx_paragraph'), paragraph: Type.Integer({ minimum: 0 }) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      kind: Type.Literal('docx_table_cell'),
      table: Type.Integer({ minimum: 0 }),
      row: Type.Integer({ minimum: 0 }),
      cell: Type.Integer({ minimum: 0 }),
      answer_cell: Type.Union([Cell, Type.Null()]),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    { kind: Type.Literal('xlsx_cell'), sheet: Type.String(), cell: Type.String(), answer_cell: Type.String() },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal('text_line'), line: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
]);

export const FormInfoSchema = Type.Object(
  {
    name: Type.String(),
    media_type: Type.String(),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    bytes: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const QuestionSchema = Type.Object(
  {
    id: Uuid,
    text: Type.String({ minLength: 1 }),
    answer_kind: Type.Union(ANSWER_KINDS.map((k) => Type.Literal(k))),
    required: Type.Boolean(),
    section: Type.Union([Type.String(), Type.Null()]),
    block: Type.String(),
    location: QuestionLocationSchema,
  },
  { additionalProperties: false },
);

/** A scanned form (docs/DECISIONS.md "Scanned documents read"): read by OCR, and not filled in. */
const ScannedSchema = Type.Object(
  {
    ocr: Type.String({ description: 'what OCR read of the form: pages, mean confidence, pages to check' }),
    filled_copy: Type.String({ description: 'why no filled copy is made' }),
  },
  { additionalProperties: false },
);

export const AnalyseFormResultSchema = Type.Object(
  {
    form: FormInfoSchema,
    questions: Type.Array(QuestionSchema),
    /** Questions the model placed at a block the form does not have: dropped, named here. */
    dropped: Type.Array(Type.String()),
    scanned: Type.Optional(ScannedSchema),
  },
  { additionalProperties: false },
);

export const EvidenceSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('q_a_pair'), Type.Literal('chunk'), Type.Literal('entity')]),
    /** The row: a q_a_extractions, content_chunks or entity_mentions id. */
    id: Uuid,
    score: Type.Number(),
    similarity: Type.Union([Type.Number(), Type.Null()]),
    lexical: Type.Boolean(),
    text: Type.String(),
    citation: Type.String({ pattern: '^record://(source_document|reference_item)/' }),
    source: Type.String({ description: "the cited document's corpus-relative path, or the reference item's URL" }),
  },
  { additionalProperties: false },
);

export const AnswerSchema = Type.Object(
  {
    question_id: Uuid,
    question: Type.String(),
    answer: Type.Union([Type.String(), Type.Null()]),
    no_evidence: Type.Boolean(),
    confidence: Type.Number({ minimum: 0, maximum: 1 }),
    citations: Type.Array(Type.String()),
    evidence: Type.Array(EvidenceSchema),
  },
  { additionalProperties: false },
);

export const TemplateFillResultSchema = Type.Object(
  {
    form: FormInfoSchema,
    analysis_job: Type.Union([Uuid, Type.Null()]),
    answers: Type.Array(AnswerSchema),
    output: Type.Object(
      { result: Type.String(), filled: Type.Union([Type.String(), Type.Null()]) },
      { additionalProperties: false },
    ),
    scanned: Type.Optional(ScannedSchema),
  },
  { additionalProperties: false },
);

export type FormRef = Static<typeof FormRefSchema>;
export type AnalyseFormPayload = Static<typeof AnalyseFormPayloadSchema>;
export type TemplateFillPayload = Static<typeof TemplateFillPayloadSchema>;
export type QuestionLocation = Static<typeof QuestionLocationSchema>;
export type FormInfo = Static<typeof FormInfoSchema>;
export type Question = Static<typeof QuestionSchema>;
export type AnalyseFormResult = Static<typeof AnalyseFormResultSchema>;
export type Evidence = Static<typeof EvidenceSchema>;
export type Answer = Static<typeof AnswerSchema>;
export type TemplateFillResult = Static<typeof TemplateFillResultSchema>;

/** Every schema by the name `ingest jobs schema` takes. */
export const JOB_SCHEMAS: Readonly<Record<string, TSchema>> = {
  'analyse_form.payload': AnalyseFormPayloadSchema,
  'analyse_form.result': AnalyseFormResultSchema,
  'template_fill.payload': TemplateFillPayloadSchema,
  'template_fill.result': TemplateFillResultSchema,
};

/** `payload` as the job's type, or a final bad_payload JobError saying what does not fit. */
export function payloadParser<S extends TSchema>(job: string, schema: S): (payload: unknown) => Static<S> {
  const valid = validator(schema);
  return (payload) => {
    if (!valid(payload)) throw new JobError('bad_payload', `${job} payload: ${valid.explain()}`, { final: true });
    return payload;
  };
}
