// `ingest preflight`: one cheap message with no system block to the configured model endpoint
// (docs/behaviour/tiers.md#credential-preflight; lib/llm/preflight.ts), so a dead key fails at
// minute one instead of mid-walk. With no model variable set there is no endpoint: a walk starts
// the in-process mock (tier 1), so there is nothing to check. With ANTHROPIC_BASE_URL and no
// credential (a mock of one's own), its /health is what can be checked (docs/DECISIONS.md).
// Past a live credential it also says whether the endpoint serves the Message Batches API, which
// only `ingest prefill` needs: a gateway without it is told, not failed.

import type { Config } from '../lib/config.ts';
import { BatchApiUnavailableError, BatchVendor } from '../engine/prefill/batches.ts';
import { createLlmClient, LLM_VARIABLES } from '../lib/llm/client.ts';
import { scrubBlankVariables } from '../lib/llm/env.ts';
import { describePreflight, preflightPing } from '../lib/llm/preflight.ts';

/** One bounded GET; the endpoint is the operator's own mock, so no retry: it answers or not. */
const HEALTH_TIMEOUT_MS = 20_000;

export async function preflightCommand(_args: string[], { config }: { config: Config }): Promise<number> {
  scrubBlankVariables(LLM_VARIABLES);
  const env = process.env;
  if (LLM_VARIABLES.every((name) => env[name] === undefined)) {
    process.stdout.write('preflight ok: tier 1: the in-process mock, nothing to check\n');
    return 0;
  }
  if (env.ANTHROPIC_API_KEY === undefined && env.ANTHROPIC_AUTH_TOKEN === undefined) {
    return mockHealth(env.ANTHROPIC_BASE_URL!);
  }
  const outcome = await preflightPing(config.models.extraction);
  if (outcome.ok) {
    process.stdout.write(`preflight ok: ${describePreflight(outcome)}\n${await batchApiLine()}\n`);
    return 0;
  }
  process.stderr.write(
    `ingest: preflight failed against ${outcome.identity} (tier ${outcome.tier}): ${describePreflight(outcome)}\n`,
  );
  return 1;
}

/** Whether `ingest prefill` can buy through this endpoint; a failure to tell is told too. */
async function batchApiLine(): Promise<string> {
  try {
    await new BatchVendor(createLlmClient(), 0).checkServed();
    return 'batch API: served (ingest prefill can buy here)';
  } catch (error) {
    if (error instanceof BatchApiUnavailableError) return 'batch API: not served (ingest prefill refuses to run here)';
    return `batch API: could not tell (${(error as Error).message})`;
  }
}

async function mockHealth(baseUrl: string): Promise<number> {
  const url = `${baseUrl.replace(/\/+$/, '')}/health`;
  const failed = (why: string) => {
    process.stderr.write(`ingest: preflight failed (tier mock, no credential set): ${url} ${why}\n`);
    return 1;
  };
  let status: number;
  try {
    status = (await fetch(url, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) })).status;
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return failed(`did not answer (${cause?.code ?? cause?.message ?? (error as Error).message})`);
  }
  if (status !== 200) return failed(`answered HTTP ${status}`);
  process.stdout.write(`preflight ok: tier mock, no credential to check; ${url} answered 200\n`);
  return 0;
}
