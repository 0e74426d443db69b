// Tier 1 by default (docs/behaviour/tiers.md#the-tiers): when no model endpoint or credential is
// configured, the command starts the bundled mock model server in process and points the SDKs'
// variables at it, saying so in the log at debug. Closing the handle stops the mock and takes the
// variables back. The environment stays the only redirect seam of the model clients: the engine
// and the worker read it as they find it, and never start a server of their own.
//
// Its LLM identity is `tier1-mock@{mock version}`, not its URL: the port is new every run, and
// an identity with it would make every run re-extract what the last one memoised; the version
// (a digest of the mock's source) changes when its answers may (docs/DECISIONS.md "Tier 1's
// identity"). It travels beside ANTHROPIC_BASE_URL as LLM_IDENTITY_VARIABLE, so an engine thread
// started from this environment names the mock as this thread does.

import type { Logger } from '../lib/log.ts';
import { startMockServer } from '../mock/server.ts';
import { LLM_IDENTITY_VARIABLE, LLM_VARIABLES } from '../lib/llm/client.ts';
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
    ...(llmConfigured
      ? {}
      : {
          ANTHROPIC_BASE_URL: mock.url,
          ANTHROPIC_API_KEY: PLACEHOLDER_KEY,
          [LLM_IDENTITY_VARIABLE]: TIER1_IDENTITY,
        }),
    ...(embedderConfigured ? {} : { OPENAI_BASE_URL: `${mock.url}/v1`, OPENAI_API_KEY: PLACEHOLDER_KEY }),
  };
  Object.assign(env, set);
  // At debug: every command of an unconfigured setup says it, and README says what tier 1 is.
  log.debug(
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
      await mock.close();
    },
  };
}

/**
 * Opens what a command works with (a lifespan, a worker runtime) with tier 1 started first when
 * nothing is configured; closing it stops tier 1 after it, and so does a failure to open it.
 */
export async function withTier1<T extends { close(): Promise<void> }>(log: Logger, open: () => Promise<T>): Promise<T> {
  const tier1 = await startMockTierIfUnconfigured(log);
  let opened: T;
  try {
    opened = await open();
  } catch (error) {
    await tier1.close();
    throw error;
  }
  return {
    ...opened,
    async close() {
      try {
        await opened.close();
      } finally {
        await tier1.close();
      }
    },
  };
}
