// The model side of the engine: the two SDK clients (built after tier 1 may have pointed the
// environment at the in-process mock), the extraction model and its identity, and one queue
// bounding the model calls in flight across the walk.

import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import PQueue from 'p-queue';
import type { Config } from '../lib/config.ts';
import { createEmbeddingClient } from '../lib/embed/client.ts';
import { createLlmClient, llmIdentity } from '../lib/llm/client.ts';
import { startMockTierIfUnconfigured } from './tier1.ts';
import type { Logger } from '../lib/log.ts';

export interface Models {
  llm: Anthropic;
  model: string;
  identity: string;
  embedder: OpenAI;
  queue: PQueue;
  close(): Promise<void>;
}

export async function openModels(config: Config, log: Logger): Promise<Models> {
  const tier1 = await startMockTierIfUnconfigured(log);
  const llm = createLlmClient();
  return {
    llm,
    model: config.models.extraction,
    identity: llmIdentity(llm, config.models.extraction),
    embedder: createEmbeddingClient(),
    queue: new PQueue({ concurrency: config.walk.modelConcurrency }),
    close: () => tier1.close(),
  };
}
