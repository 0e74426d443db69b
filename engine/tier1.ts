// Tier 1 by default (docs/behaviour/tiers.md#the-tiers): when no model endpoint or credential is
// configured, the walk starts the bundled mock model server in process and points the SDKs'
// variables at it, saying so in the log. Closing the handle stops the mock and restores the
// variables.
//
// Its LLM identity is `tier1-mock@{mock version}`, not its URL: the port is new every run, and
// an identity with it would make every run re-extract what the last one memoised; the version
// (a digest of the mock's source) changes when its answers may (docs/DECISIONS.md "Tier 1's
// identity").

import type { Logger } from '../lib/log.ts';
import { startMockServer } from '../mock/server.ts';
import { LLM_VARIABLES, nameEndpoint } from '../lib/llm/client.ts';
import { MOCK_VERSION } from '../mock/version.ts';
import { EMBEDDER_VARIABLES } from '../lib/embed/client.ts';
import { scrubBlankVariables } from '../lib/llm/env.ts';

const PLACEHOLDER_KEY = 'mock-tier-no-credential';
/** The base of tier 1's LLM identity. */
const TIER1_IDENTITY = `tier1-mock@${MOCK_VERSION}`;

export interface MockTier {
  close(): Promise<void>;
}

export async function startMockTierIfUnconfigured(log: Logger): Promise<MockTier> {
  const env = process.env;
  scrubBlankVariables([...LLM_VARIABLES, ...EMBEDDER_VARIABLES]);
  const llmConfigured = LLM_VARIABLES.some((name) => env[name] !== undefined);
  const embedderConfigured = EMBEDDER_VARIABLES.some((name) => env[name] !== undefined);
  if (llmConfigured && embedderConfigured) return { close: async () => {} };
  const mock = await startMockServer();
  const set: Record<string, string> = {
    ...(llmConfigured ? {} : { ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: PLACEHOLDER_KEY }),
    ...(embedderConfigured ? {} : { OPENAI_BASE_URL: `${mock.url}/v1`, OPENAI_API_KEY: PLACEHOLDER_KEY }),
  };
  Object.assign(env, set);
  const unname = llmConfigured ? () => {} : nameEndpoint(mock.url, TIER1_IDENTITY);
  log.info(
    {
      url: mock.url,
      llm: !llmConfigured,
      embeddings: !embedderConfigured,
      ...(llmConfigured ? {} : { identity: TIER1_IDENTITY }),
    },
    'no model endpoint configured: using the in-process mock model server (tier 1)',
  );
  return {
    async close() {
      for (const name of Object.keys(set)) delete env[name];
      unname();
      await mock.close();
    },
  };
}
