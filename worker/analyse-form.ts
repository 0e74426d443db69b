// analyse_form: a form's questions, each with a stable id and where it sits. The form is read
// into addressed blocks by the isolated converters (stages/convert/layout.ts), the model is
// shown one block per line as "[address] text" and names each question's block
// (the form_questions prompt, lib/llm/prompts.ts); the block gives the location, and for DOCX
// table cells and XLSX cells the cell its answer goes in.

import type { Converter, FormBlock } from '../stages/convert/index.ts';
import { askModel, type ModelCallContext } from '../lib/llm/run-extractor.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import type { FormQuestions } from '../lib/llm/schemas.ts';
import { formQuestionKey } from '../lib/ids.ts';
import type { Form } from './form-source.ts';
import type { AnalyseFormResult, Question, QuestionLocation } from './payloads.ts';

/** Blocks shown to the model at most (about 40k tokens): a longer form is cut, and says so. */
const MAX_PROMPT_CHARS = 160_000;

export interface AnalyseDeps {
  converter: Converter;
  models: ModelCallContext;
  onModelRetry?: () => void;
}

export async function analyseForm(form: Form, deps: AnalyseDeps): Promise<AnalyseFormResult> {
  const { blocks, ocr } = await deps.converter.blocks(form.bytes, form.mediaType);
  const byAddress = new Map(blocks.map((b) => [b.address, b]));
  const lines: string[] = [];
  let chars = 0;
  for (const block of blocks) {
    if (block.text === '') continue;
    const line = `[${block.address}] ${block.text.replace(/\s+/g, ' ')}`;
    if (chars + line.length > MAX_PROMPT_CHARS) break;
    lines.push(line);
    chars += line.length + 1;
  }
  const found =
    lines.length === 0
      ? { questions: [] }
      : await askModel<FormQuestions>(PROMPTS.form_questions, lines.join('\n'), deps.models, deps.onModelRetry);
  const questions: Question[] = [];
  const dropped: string[] = [];
  const ordinals = new Map<string, number>();
  for (const q of found.questions) {
    const block = byAddress.get(q.block);
    if (block === undefined) {
      dropped.push(`${q.block}: ${q.text}`);
      continue;
    }
    const ordinal = ordinals.get(q.block) ?? 0;
    ordinals.set(q.block, ordinal + 1);
    questions.push({
      id: formQuestionKey(form.info.sha256, q.block, ordinal),
      text: q.text,
      answer_kind: q.answer_kind,
      required: q.required,
      section: q.section,
      block: q.block,
      location: locate(block, blocks),
    });
  }
  return { form: form.info, questions, dropped, ...(ocr === undefined ? {} : { scanned: scannedForm(ocr.message) }) };
}

/** What a scanned form's result says of itself: read by OCR, and never filled in. */
export const scannedForm = (ocr: string) => ({
  ocr,
  filled_copy: 'none: a scanned form is read by OCR, and filled copies are made of DOCX and XLSX forms only',
});

/** The question's place, with the cell its answer goes in where the form has answer cells. */
function locate(block: FormBlock, blocks: readonly FormBlock[]): QuestionLocation {
  const at = block.location;
  switch (at.kind) {
    case 'docx_paragraph':
    case 'text_line':
      return at;
    case 'docx_table_cell': {
      // The next cell of the row when it is empty (the form's answer box), else none: the answer
      // then goes into the question's own cell, after the question.
      const next = blocks.find(
        (b) =>
          b.location.kind === 'docx_table_cell' &&
          b.location.table === at.table &&
          b.location.row === at.row &&
          b.location.cell === at.cell + 1,
      );
      const answerCell =
        next !== undefined && next.text === '' ? { table: at.table, row: at.row, cell: at.cell + 1 } : null;
      return { ...at, answer_cell: answerCell };
    }
    case 'xlsx_cell':
      return { ...at, answer_cell: nextEmptyCell(at.sheet, at.cell, blocks) };
  }
}

/** The first cell right of `cell` on its row that holds nothing. */
function nextEmptyCell(sheet: string, cell: string, blocks: readonly FormBlock[]): string {
  const m = /^([A-Z]+)(\d+)$/.exec(cell)!;
  const taken = new Set(blocks.filter((b) => b.location.kind === 'xlsx_cell').map((b) => b.address));
  for (let column = columnNumber(m[1]!) + 1; ; column++) {
    const candidate = `${columnName(column)}${m[2]}`;
    if (!taken.has(`${sheet}!${candidate}`)) return candidate;
  }
}

function columnNumber(name: string): number {
  return [...name].reduce((n, c) => n * 26 + (c.charCodeAt(0) - 64), 0);
}

function columnName(n: number): string {
  let name = '';
  for (; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}
