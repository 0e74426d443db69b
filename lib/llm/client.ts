// The model client of the extractors (SPEC.md 8 "Model-backend tiers", DESIGN.md 9). Zero
// arguments: the environment is the only redirect seam, read here at construction (the one
// place besides lib/embed/client.ts allowed to read process.env).
//
//   tier 1, mock:    ANTHROPIC_BASE_URL at the mock server, no real credential
//   tier 2, gateway: ANTHROPIC_BASE_URL + ANTHROPIC_AUTH_TOKEN; the API key is forced empty so
//                    a vendor-shaped key neither pins the gateway's routing nor leaks to it
//   tier 3, vendor:  ANTHROPIC_BASE_URL omitted (the SDK's default applies) + ANTHROPIC_API_KEY
//
// The SDK's own retries are off: the service owns retry (lib/llm/retry.ts).

import Anthropic from '@anthropic-ai/sdk';
import { scrubBlankVariables } from './env.ts';

export const LLM_VARIABLES = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'] as const;

/** The SDK's types as the rest of the service names them, so an SDK bump stays in this module. */
export type LlmClient = Anthropic;
export type LlmMessage = Anthropic.Message;
export type LlmMessageParam = Anthropic.MessageParam;
export type LlmToolUse = Anthropic.ToolUseBlock;
export type LlmToolSchema = Anthropic.Tool.InputSchema;

export type LlmTier = 'mock' | 'gateway' | 'vendor';

export function llmTier(env: NodeJS.ProcessEnv = process.env): LlmTier {
  if (env.ANTHROPIC_BASE_URL === undefined) return 'vendor';
  return env.ANTHROPIC_AUTH_TOKEN === undefined ? 'mock' : 'gateway';
}

export function createLlmClient(): LlmClient {
  scrubBlankVariables(LLM_VARIABLES);
  const gateway = llmTier() === 'gateway';
  return new Anthropic({ maxRetries: 0, ...(gateway ? { apiKey: null } : {}) });
}

/**
 * The effective LLM identity `{base_url}:{model}` (SPEC.md 3 rule 6), computed in this one
 * place. The base URL is the client's resolved one, so tier 3 names the SDK's default without
 * this code spelling it.
 */
export function llmIdentity(client: Pick<LlmClient, 'baseURL'>, model: string): string {
  return `${client.baseURL.replace(/\/+$/, '')}:${model}`;
}
