// What a bid-worker process holds besides its database: the isolated converters, the model
// clients and their budgets (read from the environment as it stands: the command starts tier 1 first where it
// wants one, cli/tier1.ts), the corpus bucket and the output location. Opened once, closed once.

import PQueue from 'p-queue';
import { openBucket } from '../lib/bucket/index.ts';
import type { Config } from '../lib/config.ts';
import { createEmbeddingClient } from '../lib/embed/client.ts';
import { openModelBudgets } from '../lib/llm/budget.ts';
import { createLlmClient } from '../lib/llm/client.ts';
import type { Logger } from '../lib/log.ts';
import { converterOptions, createConverter, DEFAULT_CONVERTER_OPTIONS } from '../stages/convert/index.ts';
import type { JobDeps } from './jobs.ts';
import { outputLocation } from './output.ts';

export interface WorkerRuntime {
  deps: JobDeps;
  close(): Promise<void>;
}

export async function openWorkerRuntime(config: Config, log: Logger): Promise<WorkerRuntime> {
  const bucket = openBucket(config, log);
  const converter = createConverter(converterOptions(config.convert));
  const budgets = openModelBudgets(config);
  const deps: JobDeps = {
    converter,
    models: {
      client: createLlmClient(budgets.anthropic),
      embedder: createEmbeddingClient(budgets.openai, false, config.models.embedding),
      model: config.models.extraction,
      // One model call per job slot: C jobs keep C calls in flight (bench/README.md).
      queue: new PQueue({ concurrency: config.worker.concurrency }),
    },
    sources: {
      corpus: config.sourcePath,
      bucket,
      inlineMaxBytes: config.worker.inlineMaxBytes,
      maxBytes: config.convert.maxDocumentBytes,
    },
    output: outputLocation(config, bucket),
    zipLimits: {
      maxEntries: DEFAULT_CONVERTER_OPTIONS.maxZipEntries,
      maxInflatedBytes: DEFAULT_CONVERTER_OPTIONS.maxInflatedBytes,
    },
    evidenceK: config.worker.evidenceK,
    onModelRetry: () => log.debug('model call retried'),
  };
  return {
    deps,
    async close() {
      await converter.close();
      await budgets.close();
      bucket?.close();
    },
  };
}
