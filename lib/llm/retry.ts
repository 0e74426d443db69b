// The service's own retry around a model call (SPEC.md 1 stage 3, DESIGN.md 9): exponential
// backoff with full jitter, Retry-After honoured, bounded attempts and one deadline for the
// whole call. It retries what can heal by waiting (429, 5xx including 529 overloaded,
// connection errors and timeouts) and never what cannot (400, 401, 403, 404, 422, ...).
// Works with both SDKs: their errors carry `status` and `headers` alike.

import { withDeadline } from '../deadline.ts';
import { metrics } from '../metrics.ts';
import { parseRetryAfter } from '../net/retry-after.ts';

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** The whole call, all attempts and waits included, ends by this deadline. */
  deadlineMs: number;
}

// Ten attempts: at a fault rate of 20 % (a rate-limited or overloaded API) a call fails all
// six of six attempts once in 15,600, so a walk of 1,000 documents (about 6,300 calls) lost an
// item one time in three; at ten, once in 10 million calls. The deadline still bounds the call.
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 10,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  deadlineMs: 180_000,
});

export class ModelCallError extends Error {
  readonly attempts: number;
  readonly status: number | undefined;
  constructor(message: string, attempts: number, cause: unknown) {
    super(message, { cause });
    this.name = 'ModelCallError';
    this.attempts = attempts;
    this.status = statusOf(cause);
  }
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown })?.status;
  return typeof status === 'number' ? status : undefined;
}

export function isRetryable(error: unknown): boolean {
  const status = statusOf(error);
  if (status !== undefined) return status === 408 || status === 409 || status === 429 || status >= 500;
  // The SDKs' connection and timeout errors (APIConnectionError, APIConnectionTimeoutError)
  // carry no status and keep the generic name "Error": their class tells them apart.
  const kind = `${(error as Error)?.name ?? ''} ${(error as object)?.constructor?.name ?? ''}`;
  return (
    /Connection|Timeout|FetchError/.test(kind) ||
    /ECONNRESET|ECONNREFUSED|socket hang up|terminated/i.test(String((error as Error)?.message))
  );
}

/** Retry-After (seconds or HTTP date) from an SDK error's headers, in milliseconds. */
export function retryAfterMs(error: unknown, now = Date.now()): number | null {
  const headers = (error as { headers?: unknown })?.headers;
  const value =
    headers instanceof Headers
      ? headers.get('retry-after')
      : headers !== null && typeof headers === 'object'
        ? ((headers as Record<string, string | undefined>)['retry-after'] ?? null)
        : null;
  return parseRetryAfter(value ?? null, now);
}

/**
 * Runs `call` until it succeeds, fails for good, or runs out of attempts or time. `call`
 * receives the deadline's signal to pass to the SDK; `onRetry` hears every retry (the walk
 * counts them as model_retry). Every attempt and retry is also counted by `kind` for /metrics.
 */
export async function withRetry<T>(
  call: (signal: AbortSignal) => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
  onRetry: (attempt: number, error: unknown) => void = () => {},
  kind = 'unnamed',
): Promise<T> {
  const deadline = Date.now() + policy.deadlineMs;
  return withDeadline(policy.deadlineMs, async (signal) => {
    for (let attempt = 1; ; attempt++) {
      try {
        metrics.modelCalls.inc({ kind });
        return await call(signal);
      } catch (error) {
        const outOfTime = signal.aborted || Date.now() >= deadline;
        if (!isRetryable(error) || attempt >= policy.attempts || outOfTime) {
          const why = !isRetryable(error) ? 'not retryable' : outOfTime ? 'deadline passed' : 'attempts exhausted';
          throw new ModelCallError(
            `model call failed after ${attempt} attempt(s) (${why}): ${(error as Error)?.message ?? error}`,
            attempt,
            error,
          );
        }
        const backoff = Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
        const wait = Math.min(policy.maxDelayMs, retryAfterMs(error) ?? backoff, Math.max(0, deadline - Date.now()));
        onRetry(attempt, error);
        metrics.modelRetries.inc({ kind });
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  });
}
