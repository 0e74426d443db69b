// The embedding client (docs/behaviour/stages.md#stage-4-embedding): the OpenAI SDK, zero
// arguments, configured by OPENAI_BASE_URL and OPENAI_API_KEY only, blank values scrubbed first,
// its retries off (the service owns retry), and a budget debited by its requests when one is
// configured (lib/llm/budget-fetch.ts). It carries the model it asks for (INGEST_EMBEDDING_MODEL,
// docs/DECISIONS.md "An embedder of the user's choosing"), so that every vector it makes is
// stamped with the model that made it.

import OpenAI from 'openai';
import { scrubBlankVariables } from '../llm/env.ts';
import { MOCK_TIER_KEY } from '../llm/client.ts';
import { FAILURE_SENTINEL } from '../failure-directive.ts';
import type { ModelBudget } from '../llm/budget.ts';
import { budgetedFetch, openAiMeter } from '../llm/budget-fetch.ts';
import { DEFAULT_EMBEDDING_MODEL } from '../config-table.ts';

/** The model a client asks for, and whether its requests say `dimensions` (some servers reject it). */
export interface EmbeddingModel {
  readonly name: string;
  readonly sendDimensions: boolean;
}

/** The SDK's client as the rest of the service names it (so an SDK bump stays in this module), with its model. */
export type EmbeddingClient = OpenAI & { readonly embeddingModel: EmbeddingModel };

export const EMBEDDER_VARIABLES = ['OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;
/** The specified model, and the default. */
export const EMBEDDING_MODEL = DEFAULT_EMBEDDING_MODEL;
/** Every vector's length, whatever the model: the schema's vector(1024) columns. */
export const EMBEDDING_DIMENSIONS = 1024;
export const SPECIFIED_EMBEDDING_MODEL: EmbeddingModel = { name: EMBEDDING_MODEL, sendDimensions: true };

/**
 * `budget`: the embedding model's shared budget (lib/llm/budget.ts); none: calls go unmetered.
 * `broken`: its key is the failure directive's sentinel (lib/failure-directive.ts).
 * `model`: the configured one (config.models.embedding); the specified one by default.
 */
export function createEmbeddingClient(
  budget: ModelBudget | null = null,
  broken = false,
  model: EmbeddingModel = SPECIFIED_EMBEDDING_MODEL,
): EmbeddingClient {
  scrubBlankVariables(EMBEDDER_VARIABLES);
  // A base URL with no key is the mock (tier 1): it takes any key, the SDK insists on one.
  const mock = process.env.OPENAI_BASE_URL !== undefined && process.env.OPENAI_API_KEY === undefined;
  const client = new OpenAI({
    maxRetries: 0,
    ...(broken ? { apiKey: FAILURE_SENTINEL } : mock ? { apiKey: MOCK_TIER_KEY } : {}),
    ...(budget === null ? {} : { fetch: budgetedFetch(budget, openAiMeter) }),
  });
  return Object.assign(client, { embeddingModel: { name: model.name, sendDimensions: model.sendDimensions } });
}
