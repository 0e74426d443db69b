// The model side of a walk: the two SDK clients, the extraction model and its identity, one
// queue bounding the model calls in flight across the walk, and the budgets the clients debit
// (lib/llm/budget.ts; none unless configured). The clients read the environment
// as it stands when this runs, so tier 1 is started before it (cli/tier1.ts).

import PQueue from 'p-queue';
import type { Config } from './config.ts';
import { createEmbeddingClient, type EmbeddingClient } from './embed/client.ts';
import { openModelBudgets, type ModelBudgets } from './llm/budget.ts';
import { createLlmClient, llmIdentity, type LlmClient } from './llm/client.ts';

export interface Models {
  llm: LlmClient;
  model: string;
  identity: string;
  embedder: EmbeddingClient;
  queue: PQueue;
  budgets: ModelBudgets;
  /** A client of each kind on the same budgets, for the passes that make their own; `broken`: see createLlmClient. */
  newLlm(broken?: boolean): LlmClient;
  newEmbedder(broken?: boolean): EmbeddingClient;
}

export function createModels(config: Config): Models {
  const budgets = openModelBudgets(config);
  const newLlm = (broken = false) => createLlmClient(budgets.anthropic, broken);
  const newEmbedder = (broken = false) => createEmbeddingClient(budgets.openai, broken, config.models.embedding);
  const llm = newLlm();
  return {
    llm,
    model: config.models.extraction,
    identity: llmIdentity(llm, config.models.extraction),
    embedder: newEmbedder(),
    queue: new PQueue({ concurrency: config.walk.modelConcurrency }),
    budgets,
    newLlm,
    newEmbedder,
  };
}
