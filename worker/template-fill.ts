// template_fill: for each question of an analysed form, evidence from the corpus
// (worker/retrieval.ts), an answer drafted by the model from that evidence alone with record://
// citations and a confidence (the answer_draft prompt), or "no evidence" when nothing was found
// or the model finds the evidence does not answer; then the result JSON and, for a DOCX or XLSX
// form, a filled copy, written to the output location (worker/output.ts). A form that was
// walked into the corpus is never its own evidence: its document, found by its path and by its
// bytes, is left out of retrieval (docs/DECISIONS.md "A form is never its own evidence").

import type { Queryable } from '../lib/db/database.ts';
import { askModel, type ModelCallContext } from '../lib/llm/run-extractor.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import type { AnswerDraft } from '../lib/llm/schemas.ts';
import type { ZipLimits } from '../stages/convert/zip-guard.ts';
import { fillDocx, fillXlsx } from './fill.ts';
import type { Form } from './form-source.ts';
import type { OutputLocation } from './output.ts';
import type { AnalyseFormResult, Answer, Evidence, Question, TemplateFillResult } from './payloads.ts';
import { retrieve, type Embed } from './retrieval.ts';

export const NO_EVIDENCE = "No evidence found in the organisation's records.";

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

export interface FillDeps {
  db: Queryable;
  embed: Embed;
  models: ModelCallContext;
  onModelRetry?: () => void;
  output: OutputLocation;
  zipLimits: ZipLimits;
  evidenceK: number;
  signal: AbortSignal;
}

/** The message of the answer_draft prompt: the question and its numbered evidence. */
export function draftMessage(question: Question, evidence: readonly Evidence[]): string {
  const lines = evidence.map(
    (e, i) => `[${i + 1}] (${e.kind}, score ${(e.similarity ?? 0).toFixed(2)}) ${e.text.replace(/\s+/g, ' ')}`,
  );
  return `Question: ${question.text}\nExpected answer: ${question.answer_kind}\n\nEvidence:\n${lines.join('\n')}`;
}

/**
 * The documents that are the form itself: the one at the form's corpus path (the form as it was
 * walked, maybe before an edit) and any whose bytes are the form's (a copy elsewhere, an inline form).
 */
export async function formDocuments(db: Queryable, form: Form): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM source_documents WHERE content_sha256 = $1 OR rel_path = $2`,
    [form.info.sha256, form.corpusPath],
  );
  return rows.map((r) => r.id);
}

export async function answerQuestion(
  question: Question,
  deps: FillDeps,
  excludeDocuments: readonly string[],
): Promise<Answer> {
  const evidence = await retrieve(deps.db, deps.embed, question.text, deps.evidenceK, { excludeDocuments });
  const none: Answer = {
    question_id: question.id,
    question: question.text,
    answer: null,
    no_evidence: true,
    confidence: 0,
    citations: [],
    evidence,
  };
  if (evidence.length === 0) return none;
  deps.signal.throwIfAborted();
  const draft = await askModel<AnswerDraft>(
    PROMPTS.answer_draft,
    draftMessage(question, evidence),
    deps.models,
    deps.onModelRetry,
  );
  // Citations only of evidence that exists: a number past the list is the model's slip, dropped.
  const citations = [
    ...new Set(draft.citations.flatMap((n) => (evidence[n - 1] === undefined ? [] : [evidence[n - 1]!.citation]))),
  ];
  if (draft.answer === null || citations.length === 0) return none;
  return { ...none, answer: draft.answer, no_evidence: false, confidence: draft.confidence, citations };
}

export async function templateFill(
  jobId: string,
  form: Form,
  analysis: AnalyseFormResult,
  analysisJob: string | null,
  deps: FillDeps,
): Promise<TemplateFillResult> {
  const ownDocuments = await formDocuments(deps.db, form);
  const answers = await Promise.all(analysis.questions.map((q) => answerQuestion(q, deps, ownDocuments)));
  deps.signal.throwIfAborted();
  const filledAnswers = analysis.questions.map((question, i) => ({
    question,
    text: answers[i]!.answer ?? NO_EVIDENCE,
  }));
  let filled: string | null = null;
  const stem = form.info.name.replace(/\.[^.]+$/, '');
  if (form.mediaType === DOCX)
    filled = await deps.output.write(
      jobId,
      `${stem}.filled.docx`,
      await fillDocx(form.bytes, filledAnswers, deps.zipLimits),
    );
  else if (form.mediaType === XLSX)
    filled = await deps.output.write(
      jobId,
      `${stem}.filled.xlsx`,
      await fillXlsx(form.bytes, filledAnswers, deps.zipLimits),
    );
  // The file holds the result as the queue does, its own location included: one shape, one schema.
  const result: TemplateFillResult = {
    form: form.info,
    analysis_job: analysisJob,
    answers,
    output: { result: deps.output.locate(jobId, 'result.json'), filled },
    ...(analysis.scanned === undefined ? {} : { scanned: analysis.scanned }),
  };
  await deps.output.write(jobId, 'result.json', `${JSON.stringify(result, null, 2)}\n`);
  return result;
}
