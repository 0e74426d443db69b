// The credential preflight (docs/behaviour/tiers.md#credential-preflight): one cheap message with
// no system block (the mock answers "pong") to the configured model endpoint, built by the same
// factory as the extractors' client, so a dead key or a dead endpoint fails at minute one instead
// of mid-walk. `ingest preflight` prints it; the nightly lane runs it first on tiers 2 and 3.
//
// A refusal (401, 403, 404, any 4xx but 408/409/429) fails at once; what can heal by waiting
// (429, 5xx, a dropped connection) is tried again within one minute, so an overloaded API at
// the wrong second does not fail a nightly.

import { createLlmClient, llmIdentity, llmTier, type LlmTier } from './client.ts';
import { ModelCallError, withRetry, type RetryPolicy } from './retry.ts';

export const PREFLIGHT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 3,
  baseDelayMs: 1_000,
  maxDelayMs: 5_000,
  deadlineMs: 60_000,
});

/** One attempt's own bound, inside the policy's deadline. */
const ATTEMPT_TIMEOUT_MS = 20_000;

export type PreflightOutcome =
  | { ok: true; tier: LlmTier; identity: string; attempts: number; answer: string }
  | {
      ok: false;
      tier: LlmTier;
      identity: string;
      attempts: number;
      /** The HTTP status, when the endpoint answered. */
      status?: number;
      /** The error body's type (authentication_error, permission_error, ...), when it said. */
      errorType?: string;
      message: string;
    };

/** Sends the ping with the extraction model; never throws. */
export async function preflightPing(model: string, policy: RetryPolicy = PREFLIGHT_RETRY): Promise<PreflightOutcome> {
  const client = createLlmClient();
  const tier = llmTier();
  const identity = llmIdentity(client, model);
  let attempts = 0;
  try {
    const message = await withRetry(
      (signal) => {
        attempts += 1;
        return client.messages.create(
          { model, max_tokens: 8, messages: [{ role: 'user', content: 'ping' }] },
          { signal, timeout: ATTEMPT_TIMEOUT_MS },
        );
      },
      { ...policy },
      () => {},
      'preflight',
    );
    const answer = message.content
      .map((b) => (b.type === 'text' ? b.text : ''))
      .join('')
      .trim();
    return { ok: true, tier, identity, attempts, answer };
  } catch (error) {
    const cause = error instanceof ModelCallError ? error.cause : error;
    const status = (cause as { status?: unknown })?.status;
    // The SDK's APIError keeps the parsed body: {type: "error", error: {type, message}}.
    const body = (cause as { error?: { error?: { type?: unknown; message?: unknown } } })?.error?.error;
    return {
      ok: false,
      tier,
      identity,
      attempts,
      ...(typeof status === 'number' ? { status } : {}),
      ...(typeof body?.type === 'string' ? { errorType: body.type } : {}),
      message: typeof body?.message === 'string' ? body.message : ((cause as Error)?.message ?? String(cause)),
    };
  }
}

/** The outcome as one line of text (no credential is ever part of it). */
export function describePreflight(outcome: PreflightOutcome): string {
  const tries = outcome.attempts > 1 ? ` (after ${outcome.attempts} attempts)` : '';
  if (outcome.ok) return `tier ${outcome.tier}, ${outcome.identity}, answered "${outcome.answer.slice(0, 40)}"${tries}`;
  const http = outcome.status === undefined ? '' : `HTTP ${outcome.status}, `;
  const type = outcome.errorType === undefined ? '' : `${outcome.errorType}: `;
  return `${http}${type}${outcome.message}${tries}`;
}
