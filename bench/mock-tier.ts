// Tier 1 for a benchmark or a test: the real mock model server on loopback, and the model
// environment pointed at it (both SDKs), restored as it was when the run is done. The tests
// reach it through test/helpers/mock-tier.ts.

import { startMockServer, type MockServer, type MockStats } from '../mock/server.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import { ALL_EXTRACTORS } from '../stages/extract/index.ts';

const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;

export interface MockTier {
  mock: MockServer;
  /** Closes the server and puts the variables back. */
  stop(): Promise<void>;
}

/** The model environment that points both SDKs at a mock server (for a child process, or this one). */
export function mockTierEnv(url: string): Record<(typeof VARS)[number], string> {
  return { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: 'k', OPENAI_BASE_URL: `${url}/v1`, OPENAI_API_KEY: 'k' };
}

export async function startMockTier(): Promise<MockTier> {
  const saved = VARS.map((name) => [name, process.env[name]] as const);
  const mock = await startMockServer();
  Object.assign(process.env, mockTierEnv(mock.url));
  return {
    mock,
    async stop() {
      await mock.close();
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}

const EXTRACTION_TOOLS = ALL_EXTRACTORS.map((name) => PROMPTS[name].tool);

/** The calls the mock answered for the four extractors (stage 5's resolver and the producer not counted). */
export function extractionCallsOf(stats: Pick<MockStats, 'messagesByTool'>): number {
  return EXTRACTION_TOOLS.reduce((n, tool) => n + (stats.messagesByTool[tool] ?? 0), 0);
}
