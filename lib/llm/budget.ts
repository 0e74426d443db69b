// The model clients' budget: one per provider and model, shared by every process that debits it
// (docs/DECISIONS.md "Provider limits shared across processes (issue 43)"). Before a call it
// debits the request and an estimate of its tokens, waiting while the budget is spent or paused;
// after, the answer's usage corrects the estimate; a 429 pauses every process until its
// Retry-After. The counters are rate-limiter-flexible's: in PostgreSQL (table model_budget,
// schema/0018_model_budget.sql) when the service runs on it, so every process on the database
// shares them, and in this process's memory on PGlite (one process, one budget).
//
// A window is cut into slices, each allowed its share of the budget: a fixed window of the whole
// budget lets a burst at its end and another at the next one's start land in one provider window
// (twice the limit), while slices bound any window's draw to (slices + 1) / slices of the
// budget (plus one call). Slices start at multiples of their length on the clock, so k of them
// fill exactly one provider window that is fixed on the same clock.

import PQueue from 'p-queue';
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { openQueryPool, type PostgresOptions, type QueryPool } from '../db/postgres.ts';

export const BUDGET_TABLE = 'model_budget';
/** At most this many slices per window. */
export const MAX_SLICES = 20;
/**
 * A slice of the tokens holds at least this many (a few extraction calls). Smaller slices would
 * keep a provider's sliding window closer to its share (it may see one slice more), but cost
 * more store round trips per call: measured on the mock, 256 gave 0.90 of a fixed window's
 * limit where 2,048 gave 0.94 (bench/README.md "Model budget"). A call larger than a slice
 * spends the slices after it too.
 */
export const MIN_SLICE_TOKENS = 2048;
/** A slice of the requests holds at least this many. */
const MIN_SLICE_REQUESTS = 5;
/** How often a call waiting for the budget looks again within one slice, and at most how often. */
const POLLS_PER_SLICE = 8;
const MIN_POLL_MS = 20;
/** How long a 429 without a readable Retry-After pauses the budget. */
export const DEFAULT_PAUSE_MS = 1000;
/** The output a kind of call is guessed to write before any answer of it was seen, at most its max_tokens. */
const FIRST_OUTPUT_GUESS = 1024;

export interface BudgetSize {
  /** Requests per minute; null: not budgeted. */
  requestsPerMinute: number | null;
  /** Input and output tokens per minute; null: not budgeted. */
  tokensPerMinute: number | null;
}

type Limiter = RateLimiterMemory | RateLimiterPostgres;

/** Where the counters live: one PostgreSQL table shared by every process, or this process's memory. */
export class BudgetStore {
  readonly #pool: QueryPool | null;

  private constructor(pool: QueryPool | null) {
    this.#pool = pool;
  }

  static postgres(dsn: string, waits: Pick<PostgresOptions, 'connectTimeoutMs' | 'queryTimeoutMs'>): BudgetStore {
    const pool = openQueryPool(dsn, 2, waits);
    // The library computes an expiry as now + seconds * 1000, which floating point can leave a
    // hair off a whole millisecond; the column is bigint, so its numbers are sent whole.
    return new BudgetStore({
      query: (query) =>
        pool.query({ ...query, values: query.values?.map((v) => (typeof v === 'number' ? Math.round(v) : v)) }),
      end: () => pool.end(),
    });
  }

  static memory(): BudgetStore {
    return new BudgetStore(null);
  }

  limiter(keyPrefix: string, points: number, sliceMs: number): Limiter {
    const options = { keyPrefix, points, duration: sliceMs / 1000 };
    if (this.#pool === null) return new RateLimiterMemory(options);
    return new RateLimiterPostgres({
      ...options,
      storeClient: this.#pool,
      storeType: 'pool',
      tableName: BUDGET_TABLE,
      // The table is schema/0018's: the library must not create it (no DDL at run time).
      tableCreated: true,
      // A row per slice: the library's own sweep deletes those an hour past their slice (a
      // DELETE every five minutes, on an unref'd timer).
      clearExpiredByTimeout: true,
    });
  }

  async close(): Promise<void> {
    await this.#pool?.end();
  }
}

/**
 * One dimension (requests or tokens) cut into slices on the clock, one counter per slice (its
 * key names the slice). A call goes when its slice has room left, even if it does not all fit:
 * what it takes beyond the slice's share is debited to the slices after before it goes, so a
 * slice is never left unused for want of an exact fit and the draw over any run of slices stays
 * within their shares plus one call.
 */
class Slices {
  readonly #limiter: Limiter;
  readonly #sliceMs: number;
  /** What one slice allows. */
  readonly points: number;

  constructor(store: BudgetStore, keyPrefix: string, perWindow: number, windowMs: number, minPerSlice: number) {
    // Whole milliseconds per slice, so that slices tile the window exactly.
    let slices = Math.max(1, Math.min(MAX_SLICES, Math.floor(perWindow / minPerSlice)));
    while (windowMs % slices !== 0) slices -= 1;
    this.points = Math.max(1, Math.floor(perWindow / slices));
    this.#sliceMs = windowMs / slices;
    this.#limiter = store.limiter(keyPrefix, this.points, this.#sliceMs);
  }

  /** The slice `now` falls in: its number on the clock. */
  current(now = Date.now()): number {
    return Math.floor(now / this.#sliceMs);
  }

  /** The counter of slice `slice`, kept until the slice ends. */
  #counter(model: string, slice: number, now: number): [string, { customDuration: number }] {
    return [`${model}@${slice}`, { customDuration: ((slice + 1) * this.#sliceMs - now) / 1000 }];
  }

  /** Debits `points` to the current slice: its number, or the ms to wait before trying again. */
  async take(model: string, points: number): Promise<{ slice: number } | { waitMs: number }> {
    const now = Date.now();
    const slice = this.current(now);
    const [key, until] = this.#counter(model, slice, now);
    let consumed: number;
    try {
      consumed = (await this.#limiter.consume(key, points, until)).consumedPoints;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      consumed = error.consumedPoints;
    }
    if (consumed - points < this.points) {
      if (consumed > this.points) await this.#carry(model, slice + 1, consumed - this.points, now);
      return { slice };
    }
    // No room was left: the store counted the refused points, which must not keep out a smaller
    // call that fits. Look again a few times per slice, since answers give back what their
    // estimates took beyond their usage while the slice lasts.
    await this.#limiter.reward(key, points, until);
    const left = (slice + 1) * this.#sliceMs - now;
    return { waitMs: Math.max(1, Math.min(left, Math.max(MIN_POLL_MS, this.#sliceMs / POLLS_PER_SLICE))) };
  }

  /**
   * Debits `owed` to slice `slice` and what does not fit in it to the slices after, up to a
   * window's worth: a call larger than a slice spends as many slices as its tokens fill.
   */
  async #carry(model: string, slice: number, owed: number, now: number): Promise<void> {
    for (let next = slice; owed > 0 && next < slice + MAX_SLICES; next += 1) {
      const [key, until] = this.#counter(model, next, now);
      const res = await this.#limiter.penalty(key, owed, until);
      owed = Math.min(owed, res.consumedPoints - this.points);
    }
  }

  /** Gives `points` back to slice `slice`, if it is still the current one. */
  async give(model: string, points: number, slice: number): Promise<void> {
    const now = Date.now();
    if (points <= 0 || this.current(now) !== slice) return;
    const [key, until] = this.#counter(model, slice, now);
    await this.#limiter.reward(key, points, until);
  }

  /** Charges `points` more from the current slice on (what an answer used beyond its estimate). */
  async charge(model: string, points: number): Promise<void> {
    const now = Date.now();
    await this.#carry(model, this.current(now), points, now);
  }
}

/** What a call took from the budget, to be corrected by its answer's usage. */
export interface Debit {
  model: string;
  /** What the call asks for (its tool), whose answers' outputs guess the next ones'. */
  kind: string;
  tokens: number;
  /** The slice of the tokens debited (a slice's number on the clock). */
  tokenSlice: number;
}

/**
 * The output tokens the answers of one kind of call used: a running mean and spread. The guess
 * is the mean plus twice the spread, so most answers use less than their debit (given back while
 * the slice lasts) rather than more (charged after the fact, past the slice's share).
 */
class OutputGuess {
  #mean: number | null = null;
  #spread = 0;

  next(maxOutput: number): number {
    const guess = this.#mean === null ? FIRST_OUTPUT_GUESS : this.#mean + 2 * this.#spread;
    return Math.min(maxOutput, Math.ceil(guess));
  }

  learn(output: number): void {
    if (this.#mean === null) {
      this.#mean = output;
      return;
    }
    this.#spread = 0.8 * this.#spread + 0.2 * Math.abs(output - this.#mean);
    this.#mean = 0.8 * this.#mean + 0.2 * output;
  }
}

export class ModelBudget {
  readonly provider: string;
  readonly #requests: Slices | null;
  readonly #tokens: Slices | null;
  readonly #pauses: Limiter;
  /** One debit at a time per process, first come first served: a waiting call holds the line. */
  readonly #line = new PQueue({ concurrency: 1 });
  /** `${model} ${kind}` -> what its answers' outputs were. */
  readonly #outputs = new Map<string, OutputGuess>();

  constructor(provider: string, size: BudgetSize, windowMs: number, store: BudgetStore) {
    this.provider = provider;
    const perWindow = (perMinute: number) => (perMinute * windowMs) / 60_000;
    this.#requests =
      size.requestsPerMinute === null
        ? null
        : new Slices(store, `${provider}-requests`, perWindow(size.requestsPerMinute), windowMs, MIN_SLICE_REQUESTS);
    this.#tokens =
      size.tokensPerMinute === null
        ? null
        : new Slices(store, `${provider}-tokens`, perWindow(size.tokensPerMinute), windowMs, MIN_SLICE_TOKENS);
    this.#pauses = store.limiter(`${provider}-pause`, 1, windowMs);
  }

  #output(model: string, kind: string): OutputGuess {
    const key = `${model} ${kind}`;
    let guess = this.#outputs.get(key);
    if (guess === undefined) this.#outputs.set(key, (guess = new OutputGuess()));
    return guess;
  }

  /** A call's tokens before its answer: its input and the output guessed from its kind's answers. */
  estimate(call: { model: string; kind: string; input: number; maxOutput: number }): number {
    return call.input + this.#output(call.model, call.kind).next(call.maxOutput);
  }

  /**
   * Waits until the budget is not paused and its current slices have room for one request and
   * `tokens`, then debits them (what does not fit in the slice, to the slices after it).
   */
  acquire(model: string, kind: string, tokens: number, signal?: AbortSignal): Promise<Debit> {
    return this.#line.add(
      async () => {
        for (;;) {
          const paused = await this.pausedMs(model);
          if (paused > 0) {
            await sleep(paused, undefined, { signal });
            continue;
          }
          const request = (await this.#requests?.take(model, 1)) ?? { slice: 0 };
          if ('waitMs' in request) {
            await sleep(request.waitMs, undefined, { signal });
            continue;
          }
          const taken = (await this.#tokens?.take(model, tokens)) ?? { slice: 0 };
          if ('waitMs' in taken) {
            await this.#requests?.give(model, 1, request.slice);
            await sleep(taken.waitMs, undefined, { signal });
            continue;
          }
          return { model, kind, tokens, tokenSlice: taken.slice };
        }
      },
      { signal },
    );
  }

  /** Corrects a debit from what the answer used: the difference given back or charged. */
  async settle(debit: Debit, used: { input: number; output: number }): Promise<void> {
    this.#output(debit.model, debit.kind).learn(used.output);
    const difference = used.input + used.output - debit.tokens;
    if (difference > 0) await this.#tokens?.charge(debit.model, difference);
    else await this.#tokens?.give(debit.model, -difference, debit.tokenSlice);
  }

  /** Pauses every process's calls to `model` for `ms` (a 429's Retry-After); a longer pause stays. */
  async pause(model: string, ms: number): Promise<void> {
    if ((await this.pausedMs(model)) >= ms) return;
    await this.#pauses.block(model, ms / 1000);
  }

  /** How long calls to `model` stay paused; 0 when they are not. */
  async pausedMs(model: string): Promise<number> {
    const res = await this.#pauses.get(model);
    return res === null ? 0 : Math.max(0, res.msBeforeNext);
  }
}

/** The budgets of the two providers the service calls, from the configuration; null where none is set. */
export interface ModelBudgets {
  anthropic: ModelBudget | null;
  openai: ModelBudget | null;
  close(): Promise<void>;
}

export function openModelBudgets(config: Config): ModelBudgets {
  const { budget } = config.models;
  const sized = (size: BudgetSize) => size.requestsPerMinute !== null || size.tokensPerMinute !== null;
  if (!sized(budget.anthropic) && !sized(budget.openai))
    return { anthropic: null, openai: null, close: async () => {} };
  const store =
    config.database.dsn === null ? BudgetStore.memory() : BudgetStore.postgres(config.database.dsn, config.database);
  const open = (provider: 'anthropic' | 'openai') =>
    sized(budget[provider]) ? new ModelBudget(provider, budget[provider], budget.windowMs, store) : null;
  return { anthropic: open('anthropic'), openai: open('openai'), close: () => store.close() };
}
