// The model side of a walk: the two SDK clients, the extraction model and its identity, and one
// queue bounding the model calls in flight across the walk. The clients read the environment
// as it stands when this runs, so tier 1 is started before it (cli/tier1.ts).

import PQueue from 'p-queue';
import type { Config } from './config.ts';
import { createEmbeddingClient, type EmbeddingClient } from './embed/client.ts';
import { createLlmClient, llmIdentity, type LlmClient } from './llm/client.ts';

export interface Models {
  llm: LlmClient;
  model: string;
  identity: string;
  embedder: EmbeddingClient;
  queue: PQueue;
}

export function createModels(config: Config): Models {
  const llm = createLlmClient();
  return {
    llm,
    model: config.models.extraction,
    identity: llmIdentity(llm, config.models.extraction),
    embedder: createEmbeddingClient(),
    queue: new PQueue({ concurrency: config.walk.modelConcurrency }),
  };
}
