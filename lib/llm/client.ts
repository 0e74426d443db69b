// The model client of the extractors (docs/behaviour/tiers.md#the-tiers). Zero
// arguments: the environment is the only redirect seam, read here at construction (the one
// place besides lib/embed/client.ts allowed to read process.env).
//
//   tier 1, mock:    ANTHROPIC_BASE_URL at the mock server, no real credential
//   tier 2, gateway: ANTHROPIC_BASE_URL + ANTHROPIC_AUTH_TOKEN; the API key is forced empty so
//                    a vendor-shaped key neither pins the gateway's routing nor leaks to it
//   tier 3, vendor:  ANTHROPIC_BASE_URL omitted (the SDK's default applies) + ANTHROPIC_API_KEY
//
// The SDK's own retries are off: the service owns retry (lib/llm/retry.ts). A budget, when one is
// configured, is debited by every request through the SDK's fetch (lib/llm/budget-fetch.ts).

import Anthropic from '@anthropic-ai/sdk';
import type { ModelBudget } from './budget.ts';
import { anthropicMeter, budgetedFetch } from './budget-fetch.ts';
import { scrubBlankVariables } from './env.ts';
import { FAILURE_SENTINEL } from '../failure-directive.ts';

export const LLM_VARIABLES = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'] as const;

/** The SDK's types as the rest of the service names them, so an SDK bump stays in this module. */
export type LlmClient = Anthropic;
export type LlmMessage = Anthropic.Message;
export type LlmMessageParam = Anthropic.MessageParam;
export type LlmToolUse = Anthropic.ToolUseBlock;
export type LlmToolSchema = Anthropic.Tool.InputSchema;
export type LlmRequest = Anthropic.MessageCreateParamsNonStreaming & { messages: LlmMessageParam[] };

export const LLM_TIERS = ['mock', 'gateway', 'vendor'] as const;
export type LlmTier = (typeof LLM_TIERS)[number];

export function llmTier(env: NodeJS.ProcessEnv = process.env): LlmTier {
  if (env.ANTHROPIC_BASE_URL === undefined) return 'vendor';
  return env.ANTHROPIC_AUTH_TOKEN === undefined ? 'mock' : 'gateway';
}

/**
 * Whether the environment is the tier someone asked for (the nightly lane's `llm_tier`):
 * `mismatches`, one sentence per contradiction (none when it agrees), and `notes` on what it
 * holds that the tier ignores. Blank counts as unset (docs/behaviour/tiers.md#blank-means-unset).
 * Names variables, never their values.
 */
export function checkTierEnvironment(
  expected: LlmTier,
  env: NodeJS.ProcessEnv = process.env,
): { mismatches: string[]; notes: string[] } {
  const set = (name: (typeof LLM_VARIABLES)[number]) => (env[name] ?? '').trim() !== '';
  const [base, key, token] = [set('ANTHROPIC_BASE_URL'), set('ANTHROPIC_API_KEY'), set('ANTHROPIC_AUTH_TOKEN')];
  const mismatches: string[] = [];
  const notes: string[] = [];
  if (base && !URL.canParse(env.ANTHROPIC_BASE_URL!.trim())) mismatches.push('ANTHROPIC_BASE_URL is not a URL');
  switch (expected) {
    case 'mock':
      if (!base) mismatches.push('tier mock needs ANTHROPIC_BASE_URL at the mock model server; it is unset');
      if (token) mismatches.push('tier mock takes no ANTHROPIC_AUTH_TOKEN (a base URL with a token is tier gateway)');
      break;
    case 'gateway':
      if (!base) mismatches.push("tier gateway needs ANTHROPIC_BASE_URL, the gateway's address; it is unset");
      if (!token) mismatches.push('tier gateway needs ANTHROPIC_AUTH_TOKEN, sent as the bearer; it is unset');
      // The tier-2 rule (docs/behaviour/tiers.md#the-tiers) is kept by createLlmClient, which
      // builds the gateway's client without a key whatever the environment holds (a compose default
      // may fill it).
      if (key) notes.push('ANTHROPIC_API_KEY is set and not sent: the gateway tier forces it empty');
      break;
    case 'vendor':
      if (base)
        mismatches.push("tier vendor needs ANTHROPIC_BASE_URL unset (the SDK's default address applies); it is set");
      if (!key) mismatches.push('tier vendor needs ANTHROPIC_API_KEY, the real key; it is unset');
      if (token)
        mismatches.push("tier vendor takes no ANTHROPIC_AUTH_TOKEN (that is the gateway's credential); it is set");
      break;
  }
  return { mismatches, notes };
}

/** What tier 1 sends when no key is set: the mock takes any credential, the SDK insists on one. */
export const MOCK_TIER_KEY = 'tier-1-needs-no-key';

/**
 * `budget`: the extraction model's shared budget (lib/llm/budget.ts); none: calls go unmetered.
 * `broken`: both credentials are the failure directive's sentinel (lib/failure-directive.ts).
 */
export function createLlmClient(budget: ModelBudget | null = null, broken = false): LlmClient {
  scrubBlankVariables(LLM_VARIABLES);
  const tier = llmTier();
  const credential =
    tier === 'gateway'
      ? { apiKey: null }
      : broken
        ? { apiKey: FAILURE_SENTINEL }
        : tier === 'mock' && process.env.ANTHROPIC_API_KEY === undefined
          ? { apiKey: MOCK_TIER_KEY }
          : {};
  return new Anthropic({
    maxRetries: 0,
    ...credential,
    ...(broken ? { authToken: FAILURE_SENTINEL } : {}),
    ...(budget === null ? {} : { fetch: budgetedFetch(budget, anthropicMeter) }),
  });
}

/**
 * The name that stands for ANTHROPIC_BASE_URL in the LLM identity, for an endpoint whose answers
 * do not depend on where it listens: tier 1's in-process mock takes a new port every run, and
 * named by its version instead (cli/tier1.ts sets it beside the base URL) its memos serve the
 * next run too. It names the endpoint at ANTHROPIC_BASE_URL only: a client of any other address,
 * or any client while it is unset or blank, is named by its base URL.
 */
export const LLM_IDENTITY_VARIABLE = 'INGEST_LLM_IDENTITY';

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '');

/**
 * The effective LLM identity `{base_url}:{model}` (docs/behaviour/states.md#memo-and-stamping),
 * computed in this one place. The base URL is the client's resolved one, so tier 3 names the SDK's
 * default without this code spelling it; an endpoint named by LLM_IDENTITY_VARIABLE (tier 1) goes
 * by its name.
 */
export function llmIdentity(
  client: Pick<LlmClient, 'baseURL'>,
  model: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const base = withoutTrailingSlash(client.baseURL);
  const name = env[LLM_IDENTITY_VARIABLE]?.trim();
  const named =
    name && env.ANTHROPIC_BASE_URL !== undefined && withoutTrailingSlash(env.ANTHROPIC_BASE_URL.trim()) === base;
  return `${named ? name : base}:${model}`;
}
