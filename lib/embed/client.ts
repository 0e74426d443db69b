// The embedding client (docs/behaviour/stages.md#stage-4-embedding): the OpenAI SDK, zero
// arguments, configured by OPENAI_BASE_URL and OPENAI_API_KEY only, blank values scrubbed first,
// its retries off (the service owns retry), and a budget debited by its requests when one is
// configured (lib/llm/budget-fetch.ts).

import OpenAI from 'openai';
import { scrubBlankVariables } from '../llm/env.ts';
import { MOCK_TIER_KEY } from '../llm/client.ts';
import { FAILURE_SENTINEL } from '../failure-directive.ts';
import type { ModelBudget } from '../llm/budget.ts';
import { budgetedFetch, openAiMeter } from '../llm/budget-fetch.ts';

/** The SDK's client as the rest of the service names it, so an SDK bump stays in this module. */
export type EmbeddingClient = OpenAI;

export const EMBEDDER_VARIABLES = ['OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;
export const EMBEDDING_MODEL = 'text-embedding-3-large';
export const EMBEDDING_DIMENSIONS = 1024;

/**
 * `budget`: the embedding model's shared budget (lib/llm/budget.ts); none: calls go unmetered.
 * `broken`: its key is the failure directive's sentinel (lib/failure-directive.ts).
 */
export function createEmbeddingClient(budget: ModelBudget | null = null, broken = false): EmbeddingClient {
  scrubBlankVariables(EMBEDDER_VARIABLES);
  // A base URL with no key is the mock (tier 1): it takes any key, the SDK insists on one.
  const mock = process.env.OPENAI_BASE_URL !== undefined && process.env.OPENAI_API_KEY === undefined;
  return new OpenAI({
    maxRetries: 0,
    ...(broken ? { apiKey: FAILURE_SENTINEL } : mock ? { apiKey: MOCK_TIER_KEY } : {}),
    ...(budget === null ? {} : { fetch: budgetedFetch(budget, openAiMeter) }),
  });
}
