// One process's share of a walk's model calls, through the real clients and the shared budget
// (lib/llm/budget.ts): the four extractor prompts over generated texts, `concurrency` calls in
// flight, each through the service's retry. The benchmark bench/model-budget.ts and the test
// test/model-budget.test.ts run it in child processes (three processes debiting one budget), or
// in process.
//
//   node bench/model-budget-load.ts --calls N [--concurrency C] [--offset O]
//
// The model endpoint and the budget come from the environment, as in the service
// (ANTHROPIC_BASE_URL, ENGINE_DB_DSN, INGEST_ANTHROPIC_TOKENS_PER_MINUTE, ...); it prints one
// JSON line: calls that succeeded and failed, retries, and when it started and ended.

import PQueue from 'p-queue';
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../lib/config.ts';
import { openModelBudgets } from '../lib/llm/budget.ts';
import { createLlmClient } from '../lib/llm/client.ts';
import { PROMPTS, type ExtractorName } from '../lib/llm/prompts.ts';
import { askModel } from '../lib/llm/run-extractor.ts';

export interface LoadResult {
  ok: number;
  failed: number;
  retries: number;
  /** Why calls failed, one line each. */
  errors: string[];
  startedAt: number;
  endedAt: number;
}

const EXTRACTORS: readonly ExtractorName[] = ['classification', 'qa', 'entities', 'relationships'];

/** The text of call `i`: a few sentences with names and a Q&A pair, of varied length. */
export function loadText(i: number): string {
  const sentence = `Northwind Traders Ltd and Acme Corporation signed contract ${i} with Jane Doe in Leeds.`;
  return `${sentence.repeat(1 + (i % 5))}\nQ: What is contract ${i}?\nA: A supply agreement.`;
}

export async function runLoad(
  config: Config,
  { calls, concurrency, offset = 0 }: { calls: number; concurrency: number; offset?: number },
): Promise<LoadResult> {
  const budgets = openModelBudgets(config);
  const client = createLlmClient(budgets.anthropic);
  const queue = new PQueue({ concurrency });
  const result: LoadResult = { ok: 0, failed: 0, retries: 0, errors: [], startedAt: Date.now(), endedAt: 0 };
  try {
    await Promise.all(
      Array.from({ length: calls }, async (_, n) => {
        const i = offset + n;
        try {
          await askModel(
            PROMPTS[EXTRACTORS[i % EXTRACTORS.length]!],
            loadText(i),
            { client, model: config.models.extraction, queue },
            () => (result.retries += 1),
          );
          result.ok += 1;
        } catch (error) {
          result.failed += 1;
          result.errors.push((error as Error).message);
        }
      }),
    );
  } finally {
    result.endedAt = Date.now();
    await budgets.close();
  }
  return result;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      calls: { type: 'string', default: '40' },
      concurrency: { type: 'string', default: '8' },
      offset: { type: 'string', default: '0' },
    },
  });
  const result = await runLoad(loadConfig(), {
    calls: Number(values.calls),
    concurrency: Number(values.concurrency),
    offset: Number(values.offset),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
