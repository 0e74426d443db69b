// The service's one retry-with-backoff loop and its one Retry-After parser (docs/DECISIONS.md,
// "One retry loop, one Retry-After parser"). A caller says what may heal by waiting, how long to
// back off, and how long a server asked it to wait; the loop waits with node:timers/promises,
// so an abort signal ends a wait at once.

import { setTimeout as sleep } from 'node:timers/promises';
import { IngestError } from './errors.ts';

/** How long to wait before the retry after failed attempt `attempt` (1-based), in ms. */
export type Backoff = (attempt: number) => number;

/** The exponential ceiling of `attempt`: base, 2 base, 4 base, ... up to max. */
function ceilingMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

/** Full jitter: anywhere from 0 to the exponential ceiling, so callers that failed together spread out most. */
export function fullJitter(baseMs: number, maxMs: number, random: () => number = Math.random): Backoff {
  return (attempt) => random() * ceilingMs(attempt, baseMs, maxMs);
}

/** Equal jitter: half the ceiling fixed, half random, for a wait that must not be near zero. */
export function equalJitter(baseMs: number, maxMs: number, random: () => number = Math.random): Backoff {
  return (attempt) => {
    const ceiling = ceilingMs(attempt, baseMs, maxMs);
    return ceiling / 2 + random() * (ceiling / 2);
  };
}

export type GiveUpReason = 'not retryable' | 'deadline passed' | 'attempts exhausted';

/** The retry loop's end without a result: the last failure is the cause. */
export class RetryGaveUp extends IngestError {
  readonly attempts: number;
  readonly reason: GiveUpReason;
  constructor(attempts: number, reason: GiveUpReason, cause: unknown) {
    super('retry_gave_up', `gave up after ${attempts} attempt(s) (${reason}): ${(cause as Error)?.message ?? cause}`, {
      cause,
    });
    this.attempts = attempts;
    this.reason = reason;
  }
}

export interface RetryOptions {
  /** Attempts in all, the first included; Infinity when the deadline alone bounds them. */
  attempts: number;
  backoff: Backoff;
  /** No wait is longer, Retry-After included. */
  maxDelayMs: number;
  /** Whether a failure may heal by waiting; every failure may when absent. */
  retryable?: (error: unknown) => boolean;
  /** The wait a server asked for with this failure (a Retry-After), in ms; null for the backoff. */
  retryAfterMs?: (error: unknown) => number | null;
  /** Epoch ms: no retry starts after it, and a wait is cut short at it. */
  deadline?: number;
  /** Aborting it ends a wait at once, and the loop gives up with the last failure. */
  signal?: AbortSignal;
  /** Hears every retry before its wait. */
  onRetry?: (attempt: number, error: unknown, waitMs: number) => void;
}

/**
 * Runs `attempt` until it returns, or throws RetryGaveUp (the last failure as its cause) once a
 * failure is not retryable, the attempts are spent, or the deadline or the signal ends the wait.
 */
export async function retry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions): Promise<T> {
  // A wait cut to the deadline ends the retries after one more attempt, even when the timer
  // fired a millisecond before the clock reached the deadline (Node's timers may).
  let waitedToDeadline = false;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      const remaining = options.deadline === undefined ? Infinity : options.deadline - Date.now();
      const reason: GiveUpReason | null =
        options.retryable?.(error) === false
          ? 'not retryable'
          : options.signal?.aborted || remaining <= 0 || waitedToDeadline
            ? 'deadline passed'
            : n >= options.attempts
              ? 'attempts exhausted'
              : null;
      if (reason !== null) throw new RetryGaveUp(n, reason, error);
      const wait = Math.max(
        0,
        Math.min(options.maxDelayMs, options.retryAfterMs?.(error) ?? options.backoff(n), remaining),
      );
      waitedToDeadline = wait >= remaining;
      options.onRetry?.(n, error, wait);
      try {
        await sleep(wait, undefined, { signal: options.signal });
      } catch {
        throw new RetryGaveUp(n, 'deadline passed', error);
      }
    }
  }
}

/**
 * A Retry-After value (RFC 9110 10.2.3: delta-seconds or an HTTP-date) in milliseconds from
 * `now`, at most `maxMs`; null when absent or unreadable. Fractional seconds are read too, since
 * some model APIs send them. A date must begin with its day name, so Date.parse's leniency
 * ("5 apples", "-1") never reads as a date.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: number = Date.now(),
  maxMs: number = Infinity,
): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.min(maxMs, Number(text) * 1000);
  if (!/^[A-Za-z]{3}/.test(text)) return null;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.min(maxMs, Math.max(0, date - now));
}
