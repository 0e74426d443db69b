// The mock's provider rate limits (mock/README.md "Rate limits"): requests and tokens per window,
// per model, as the vendors enforce them, so that the model clients' shared budget
// (lib/llm/budget.ts) meets a real 429 in tests. A request is admitted whole or not at all: past
// any limit it is refused (and counts nowhere), with the time until it would fit as Retry-After.
// The window is short in tests (a second or two) and either fixed (reset at each multiple of its
// length, as a per-minute counter does) or sliding (the last `windowMs` of admitted requests).

export type WindowKind = 'fixed' | 'sliding';

/** The dimensions a limit may bound, named as the vendors' headers name them. */
export const LIMIT_DIMENSIONS = ['requests', 'tokens', 'input-tokens', 'output-tokens'] as const;
export type LimitDimension = (typeof LIMIT_DIMENSIONS)[number];

export interface MockLimits {
  /** The window's length in ms. */
  windowMs: number;
  /** `fixed` by default. */
  window?: WindowKind;
  /** Limits per window and per model; a dimension left out is not limited. */
  per: Partial<Record<LimitDimension, number>>;
}

/** What one request costs in each dimension. */
export type Cost = Record<LimitDimension, number>;

/** A dimension's state after an admission decision: what the vendors' headers report. */
export interface Reading {
  dimension: LimitDimension;
  limit: number;
  remaining: number;
  /** Epoch ms at which the dimension is back to its full limit. */
  resetAt: number;
}

export type Admission =
  { admitted: true; readings: Reading[] } | { admitted: false; retryAfterMs: number; readings: Reading[] };

/** One dimension of one model's limit: what was admitted inside the window. */
class Meter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #kind: WindowKind;
  /** Admissions still inside the window, oldest first (one entry for a fixed window's total). */
  #log: { at: number; amount: number }[] = [];

  constructor(limit: number, windowMs: number, kind: WindowKind) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#kind = kind;
  }

  /** Epoch ms at which the entry admitted at `at` leaves the window. */
  #leaves(at: number): number {
    return this.#kind === 'fixed' ? (Math.floor(at / this.#windowMs) + 1) * this.#windowMs : at + this.#windowMs;
  }

  #used(now: number): number {
    this.#log = this.#log.filter((entry) => this.#leaves(entry.at) > now);
    return this.#log.reduce((sum, entry) => sum + entry.amount, 0);
  }

  /** 0 when `amount` fits now, else the ms until enough of the window has passed for it. */
  waitFor(amount: number, now: number): number {
    let excess = this.#used(now) + amount - this.#limit;
    if (excess <= 0) return 0;
    // More than the whole limit never fits: the caller waits a window and is refused again.
    for (const entry of this.#log) {
      excess -= entry.amount;
      if (excess <= 0) return this.#leaves(entry.at) - now;
    }
    return this.#windowMs;
  }

  add(amount: number, now: number): void {
    if (amount > 0) this.#log.push({ at: now, amount });
  }

  reading(dimension: LimitDimension, now: number): Reading {
    const used = this.#used(now);
    const last = this.#log.at(-1);
    return {
      dimension,
      limit: this.#limit,
      remaining: Math.max(0, this.#limit - used),
      resetAt: last === undefined ? now : this.#leaves(last.at),
    };
  }
}

/** Every model's meters under one configuration. */
export class RateLimits {
  readonly #limits: MockLimits;
  readonly #models = new Map<string, Map<LimitDimension, Meter>>();

  constructor(limits: MockLimits) {
    this.#limits = limits;
  }

  #meters(model: string): Map<LimitDimension, Meter> {
    let meters = this.#models.get(model);
    if (meters === undefined) {
      meters = new Map();
      for (const dimension of LIMIT_DIMENSIONS) {
        const limit = this.#limits.per[dimension];
        if (limit !== undefined)
          meters.set(dimension, new Meter(limit, this.#limits.windowMs, this.#limits.window ?? 'fixed'));
      }
      this.#models.set(model, meters);
    }
    return meters;
  }

  /** Admits `cost` for `model` in every dimension, or in none (a refusal counts nowhere). */
  admit(model: string, cost: Cost, now: number = Date.now()): Admission {
    const meters = this.#meters(model);
    const wait = Math.max(0, ...[...meters].map(([dimension, meter]) => meter.waitFor(cost[dimension], now)));
    if (wait === 0) for (const [dimension, meter] of meters) meter.add(cost[dimension], now);
    const readings = [...meters].map(([dimension, meter]) => meter.reading(dimension, now));
    return wait === 0 ? { admitted: true, readings } : { admitted: false, retryAfterMs: wait, readings };
  }
}

/** The Anthropic-style headers of an admission (anthropic-ratelimit-*, reset as RFC 3339). */
export function anthropicHeaders(readings: readonly Reading[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { dimension, limit, remaining, resetAt } of readings) {
    headers[`anthropic-ratelimit-${dimension}-limit`] = String(limit);
    headers[`anthropic-ratelimit-${dimension}-remaining`] = String(remaining);
    headers[`anthropic-ratelimit-${dimension}-reset`] = new Date(resetAt).toISOString();
  }
  return headers;
}

/** The OpenAI-style headers (x-ratelimit-*-requests and -tokens, reset as a duration like `1.5s`). */
export function openAiHeaders(readings: readonly Reading[], now: number = Date.now()): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { dimension, limit, remaining, resetAt } of readings) {
    if (dimension !== 'requests' && dimension !== 'tokens') continue;
    headers[`x-ratelimit-limit-${dimension}`] = String(limit);
    headers[`x-ratelimit-remaining-${dimension}`] = String(remaining);
    headers[`x-ratelimit-reset-${dimension}`] = `${Math.max(0, resetAt - now) / 1000}s`;
  }
  return headers;
}

/** Retry-After in whole seconds, rounded up, as the vendors send it (never 0 for a real wait). */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}
