// The mock's answers to the bid-worker's prompts, from the request's text alone and
// deterministic, so the worker's tests and the retrieval benchmark mean something offline.
//
// form_questions: a block is a question when it ends with "?" or opens with an instruction
// (describe, provide, list, ...); the section is the last heading-like block before it.
// answer_draft: the answer of the first piece of evidence (its "A:" part for a Q&A pair), cited
// as [1], with that evidence's score as the confidence; no evidence gives null, as the prompt asks.

import type { AnswerDraft, FormQuestions } from '../lib/llm/schemas.ts';

const BLOCK = /^\[([^\]\n]+)\]\s*(.*)$/;
const INSTRUCTION = /^(?:\d+[.)]\s*)?(?:please\s+)?(describe|provide|list|state|confirm|explain|give|outline)\b/i;
const HEADING = /^(?:#+\s+|section\s+\w+|part\s+\w+)/i;

function answerKind(question: string): FormQuestions['questions'][number]['answer_kind'] {
  if (/^(?:\d+[.)]\s*)?(do|does|is|are|can|have|has|will|did)\b/i.test(question)) return 'yes_no';
  if (/\bhow many\b|\bnumber of\b/i.test(question)) return 'number';
  if (/\bwhen\b|\bdate\b/i.test(question)) return 'date';
  if (/^(?:\d+[.)]\s*)?(?:please\s+)?(describe|explain|outline)\b/i.test(question)) return 'long_text';
  return 'short_text';
}

export function formQuestions(text: string): FormQuestions {
  const questions: FormQuestions['questions'] = [];
  let section: string | null = null;
  for (const line of text.split('\n')) {
    const m = BLOCK.exec(line.trim());
    if (m === null) continue;
    const [, block, body] = m as unknown as [string, string, string];
    const content = body.trim();
    if (content === '') continue;
    if (HEADING.test(content) && !content.endsWith('?')) {
      section = content.replace(/^#+\s+/, '');
      continue;
    }
    const optional = /\(optional\)/i.test(content);
    const text = content.replace(/\s*\(optional\)\s*/i, ' ').trim();
    if (!text.endsWith('?') && !INSTRUCTION.test(text)) continue;
    questions.push({
      block,
      text,
      answer_kind: answerKind(content),
      required: !optional,
      section,
    });
  }
  return { questions };
}

const EVIDENCE = /^\[(\d+)\]\s*\(([^)]*)\)\s*([\s\S]*)$/;

export function answerDraft(text: string): AnswerDraft {
  const first = text
    .split('\n')
    .map((line) => EVIDENCE.exec(line.trim()))
    .find((m) => m !== null);
  if (first === undefined || first === null) return { answer: null, citations: [], confidence: 0 };
  const [, n, meta, body] = first as unknown as [string, string, string, string];
  const answer = /\bA:\s*(.+)$/.exec(body)?.[1]?.trim() || body.trim().slice(0, 400);
  const score = Number(/score ([\d.]+)/.exec(meta)?.[1] ?? 0.5);
  if (answer === '') return { answer: null, citations: [], confidence: 0 };
  return { answer, citations: [Number(n)], confidence: Math.min(1, Math.max(0, Number(score.toFixed(2)))) };
}
