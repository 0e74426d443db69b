// The service's own retry around a model call (docs/behaviour/limits.md#model-calls): exponential
// backoff with full jitter, Retry-After honoured, bounded attempts and one deadline for the
// whole call. It retries what can heal by waiting (429, 5xx including 529 overloaded,
// connection errors and timeouts) and never what cannot (400, 401, 403, 404, 422, ...).
// Works with both SDKs: their errors carry `status` and `headers` alike.

import { withDeadline } from '../deadline.ts';
import { metrics } from '../metrics.ts';
import { fullJitter, parseRetryAfter, retry, RetryGaveUp } from '../retry.ts';
import { IngestError } from '../errors.ts';

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

export class ModelCallError extends IngestError {
  readonly attempts: number;
  readonly status: number | undefined;
  constructor(message: string, attempts: number, cause: unknown) {
    super('model_call_failed', message, { cause });
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
  return parseRetryAfter(
    headers instanceof Headers
      ? headers.get('retry-after')
      : headers !== null && typeof headers === 'object'
        ? (headers as Record<string, string | undefined>)['retry-after']
        : null,
    now,
  );
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
  return withDeadline(policy.deadlineMs, (signal) =>
    retry(
      () => {
        metrics.modelCalls.inc({ kind });
        return call(signal);
      },
      {
        attempts: policy.attempts,
        backoff: fullJitter(policy.baseDelayMs, policy.maxDelayMs),
        maxDelayMs: policy.maxDelayMs,
        retryable: isRetryable,
        retryAfterMs: (error) => retryAfterMs(error),
        deadline,
        signal,
        onRetry: (attempt, error) => {
          onRetry(attempt, error);
          metrics.modelRetries.inc({ kind });
        },
      },
    ).catch((error: unknown) => {
      if (!(error instanceof RetryGaveUp)) throw error;
      throw new ModelCallError(
        `model call failed after ${error.attempts} attempt(s) (${error.reason}): ${(error.cause as Error)?.message ?? error.cause}`,
        error.attempts,
        error.cause,
      );
    }),
  );
}
