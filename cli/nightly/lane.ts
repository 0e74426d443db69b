// The nightly lane (docs/behaviour/tiers.md#nightly-lane,
// docs/behaviour/events.md#datapath-monitor): what the platform's scheduler runs every night on
// tier 1, and by hand on tier 2 or 3 for one run.
//
//   config          the tier asked for agrees with the model environment (checkTierEnvironment) and
//                   the trigger bearer is set; otherwise nothing else runs (exit 2)
//   preflight       tiers 2 and 3: one cheap ping against the real endpoint, so a dead key fails
//                   at minute one (lib/llm/preflight.ts)
//   mock_health     tier 1: the mock model server at ANTHROPIC_BASE_URL answers its /health
//   sidecar_health  the sidecar's GET /health answers 200
//   walk            POST /walk with the trigger bearer, then GET /walk-status/{id} until its
//                   one terminal state; completed is the only pass
//   rows_landed     the run's pipeline_runs row and rows (rows-landed.ts)
//
// Each step ends with one report (name, ok, duration, a one-line detail, a named error when it
// failed) handed to `onStep` as it ends; the first failure ends the lane. Every wait is bounded
// by the lane's own deadline.
//
// The lane checks its own environment: run it with the sidecar's model environment (in the
// sidecar's container, or with the same deploy variables), since the sidecar cannot be asked
// which tier it runs.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import { openDatabase } from '../../lib/db/open.ts';
import { withDeadline } from '../../lib/deadline.ts';
import { IngestError } from '../../lib/errors.ts';
import { checkTierEnvironment, createLlmClient, type LlmTier } from '../../lib/llm/client.ts';
import { describePreflight, preflightPing } from '../../lib/llm/preflight.ts';
import { parseRetryAfter } from '../../lib/retry.ts';
import {
  describeCounts,
  documentCount,
  judgeRun,
  readRunRow,
  rowsOfRun,
  type Problem,
  type RunFacts,
} from './rows-landed.ts';

export type StepName = 'config' | 'preflight' | 'mock_health' | 'sidecar_health' | 'walk' | 'rows_landed';

export interface StepReport {
  name: StepName;
  ok: boolean;
  ms: number;
  detail: string;
  /** The failure's name (tier_mismatch, preflight_failed, walk_failed, ...). */
  error?: string;
}

export interface LaneReport {
  ok: boolean;
  /** 0 passed; 1 a step failed; 2 the lane's own configuration is wrong. */
  exitCode: 0 | 1 | 2;
  tier: LlmTier;
  sidecar: string;
  ms: number;
  steps: StepReport[];
  failedStep?: StepName;
  requestId?: string;
  opId?: string;
  counts?: Record<string, number>;
  /** Where rows_landed read the run: pipeline_runs, or the walk-status answer. */
  source?: RunFacts['source'];
}

export interface LaneOptions {
  tier: LlmTier;
  /** The sidecar's origin, e.g. http://127.0.0.1:8790 (the scheduled walk calls it on loopback). */
  sidecarUrl: string;
  /** The whole lane's deadline. */
  timeoutMs: number;
  fullReprocess?: boolean;
  config: Pick<Config, 'secrets' | 'imageSha' | 'models' | 'database'>;
  onStep?: (step: StepReport) => void;
  /** Bounds of the waits inside the deadline (tests shorten them). */
  healthWaitMs?: number;
  ledgerWaitMs?: number;
}

const HEALTH_WAIT_MS = 60_000;
/** A run record sent by webhook may reach pipeline_runs a little after the walk ends. */
const LEDGER_WAIT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 10_000;
const WALK_POLL_MAX_MS = 2_000;

/** A step's named failure. */
export class LaneFailure extends IngestError {
  readonly exitCode: 1 | 2;
  constructor(code: string, message: string, exitCode: 1 | 2 = 1) {
    super(code, message);
    this.exitCode = exitCode;
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;

/** Why a fetch did not get an answer, in a word or two (ECONNREFUSED, the deadline, ...). */
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if ((error as Error)?.name === 'TimeoutError' || (error as Error)?.name === 'AbortError') return 'no answer in time';
  return typeof cause?.message === 'string' ? cause.message : String((error as Error)?.message ?? error);
}

/** scheme://host:port of a URL, so no path, query or userinfo is ever printed. */
const origin = (url: string) => new URL(url).origin;

/** What a completed walk told: the run rows_landed then reads. */
interface Walked {
  requestId: string;
  opId: string | null;
  counts: Record<string, number>;
}

/** A probe's answer: the step's detail once it is done, else why to ask again. */
type Probe = { done: string } | { retry: string };

/** One run of the lane: its deadline, its report as it grows, and one method per step. */
class NightlyLane {
  readonly #options: LaneOptions;
  readonly #started = Date.now();
  readonly #deadline: number;
  /** The sidecar's origin without a trailing slash. */
  readonly #sidecar: string;
  readonly #bearer: string | null;
  readonly #report: LaneReport;
  /** Set by the walk step when the walk completed. */
  #walked: Walked | null = null;

  constructor(options: LaneOptions) {
    this.#options = options;
    this.#deadline = this.#started + options.timeoutMs;
    this.#sidecar = options.sidecarUrl.replace(/\/+$/, '');
    this.#bearer = options.config.secrets.pipelineTrigger;
    this.#report = { ok: false, exitCode: 1, tier: options.tier, sidecar: origin(this.#sidecar), ms: 0, steps: [] };
  }

  /** Runs the steps in order; the first failure ends the lane. */
  async run(): Promise<LaneReport> {
    const steps: [StepName, () => Promise<string>][] = [
      ['config', () => this.#config()],
      this.#options.tier === 'mock'
        ? ['mock_health', () => this.#mockHealth()]
        : ['preflight', () => this.#preflight()],
      ['sidecar_health', () => this.#sidecarHealth()],
      ['walk', () => this.#walk()],
      ['rows_landed', () => this.#rowsLanded()],
    ];
    let passed = true;
    for (const [name, work] of steps) {
      passed = await this.#step(name, work);
      if (!passed) break;
    }
    if (passed) {
      this.#report.ok = true;
      this.#report.exitCode = 0;
    }
    this.#report.ms = Date.now() - this.#started;
    return this.#report;
  }

  #remaining(): number {
    return Math.max(0, this.#deadline - Date.now());
  }

  /** Runs one step and reports it as it ends; false when it failed. */
  async #step(name: StepName, work: () => Promise<string>): Promise<boolean> {
    const began = Date.now();
    let outcome: StepReport;
    try {
      outcome = { name, ok: true, ms: 0, detail: await work() };
    } catch (error) {
      const failure =
        error instanceof LaneFailure
          ? error
          : new LaneFailure('unexpected_error', (error as Error)?.message ?? String(error));
      outcome = { name, ok: false, ms: 0, detail: failure.message, error: failure.code };
      this.#report.exitCode = failure.exitCode;
      this.#report.failedStep = name;
    }
    outcome.ms = Date.now() - began;
    this.#report.steps.push(outcome);
    this.#options.onStep?.(outcome);
    return outcome.ok;
  }

  /** One request with its own bound inside the lane's deadline. */
  #request(url: string, init: RequestInit = {}): Promise<Response> {
    return withDeadline(Math.max(1, Math.min(REQUEST_TIMEOUT_MS, this.#remaining())), (signal) =>
      fetch(url, { ...init, signal }),
    );
  }

  /** Asks until `probe` settles or the bound passes; `probe` returns a retry reason or the step's detail. */
  async #waitFor(
    boundMs: number,
    probe: () => Promise<Probe>,
    onTimeout: (reason: string, waitedMs: number) => LaneFailure,
  ): Promise<string> {
    const began = Date.now();
    const until = began + Math.min(boundMs, this.#remaining());
    for (;;) {
      const answer = await probe().catch((error: unknown) => {
        if (error instanceof LaneFailure) throw error;
        return { retry: networkReason(error) };
      });
      if ('done' in answer) return answer.done;
      if (Date.now() + 500 >= until) throw onTimeout(answer.retry, Date.now() - began);
      await sleep(500);
    }
  }

  get #healthWaitMs(): number {
    return this.#options.healthWaitMs ?? HEALTH_WAIT_MS;
  }

  /** The tier asked for agrees with the model environment, and the trigger bearer is set. */
  async #config(): Promise<string> {
    const { tier, config } = this.#options;
    const { mismatches, notes } = checkTierEnvironment(tier);
    if (mismatches.length > 0) throw new LaneFailure('tier_mismatch', mismatches.join('; '), 2);
    if (this.#bearer === null) {
      throw new LaneFailure(
        'trigger_secret_missing',
        "PIPELINE_TRIGGER_SECRET is unset: the lane cannot call POST /walk (use the sidecar's value)",
        2,
      );
    }
    const where = tier === 'vendor' ? "the SDK's default address" : origin(createLlmClient().baseURL);
    return `tier ${tier} (${where}); sidecar ${origin(this.#sidecar)}; rows read from ${
      config.database.dsn === null ? 'the walk-status answer (embedded database)' : 'pipeline_runs'
    }${notes.map((note) => `; ${note}`).join('')}`;
  }

  #mockHealth(): Promise<string> {
    const base = createLlmClient().baseURL.replace(/\/+$/, '');
    return this.#waitFor(
      this.#healthWaitMs,
      async () => {
        const answer = await this.#request(`${base}/health`);
        const body = (await answer.json().catch(() => null)) as { ok?: unknown; stats?: unknown } | null;
        if (answer.status === 200 && body?.ok === true && typeof body.stats === 'object' && body.stats !== null) {
          return { done: `the mock model server answers at ${origin(base)}` };
        }
        throw new LaneFailure(
          'not_the_mock',
          `${origin(base)}/health answered HTTP ${answer.status} without the mock's body: ` +
            'tier mock wants ANTHROPIC_BASE_URL at the mock model server (`ingest mock`)',
        );
      },
      (reason, waited) =>
        new LaneFailure(
          'mock_unreachable',
          `${origin(base)}/health did not answer within ${seconds(waited)}: ${reason}`,
        ),
    );
  }

  async #preflight(): Promise<string> {
    const outcome = await preflightPing(this.#options.config.models.extraction);
    if (!outcome.ok) {
      throw new LaneFailure(
        'preflight_failed',
        `${outcome.identity} (tier ${outcome.tier}): ${describePreflight(outcome)}`,
      );
    }
    return describePreflight(outcome);
  }

  #sidecarHealth(): Promise<string> {
    const sidecar = origin(this.#sidecar);
    return this.#waitFor(
      this.#healthWaitMs,
      async () => {
        const answer = await this.#request(`${this.#sidecar}/health`);
        await answer.body?.cancel();
        if (answer.status === 200) return { done: `${sidecar}/health answered 200` };
        if (answer.status === 503) {
          throw new LaneFailure('sidecar_unhealthy', `${sidecar}/health answered 503: the engine thread died`);
        }
        return { retry: `HTTP ${answer.status}` };
      },
      (reason, waited) =>
        new LaneFailure(
          'sidecar_unreachable',
          `${sidecar}/health did not answer 200 within ${seconds(waited)}: ${reason}`,
        ),
    );
  }

  /** POST /walk, then its walk-status until its one terminal state; completed is the only pass. */
  async #walk(): Promise<string> {
    const headers = { authorization: `Bearer ${this.#bearer}`, 'content-type': 'application/json' };
    const { requestId, busySince } = await this.#triggerWalk(headers);
    const waitedForBusy = busySince === null ? '' : ` (waited ${seconds(Date.now() - busySince)} for a running walk)`;
    const walked = await this.#followWalk(requestId, headers);
    this.#walked = walked;
    return `completed: request ${requestId}, op ${walked.opId ?? '?'}${waitedForBusy}`;
  }

  /** POST /walk until it is accepted, waiting out another walk or the rate limit. */
  async #triggerWalk(headers: Record<string, string>): Promise<{ requestId: string; busySince: number | null }> {
    const body = JSON.stringify(this.#options.fullReprocess ? { full_reprocess: true } : {});
    let busySince: number | null = null;
    for (;;) {
      const answer = await this.#request(`${this.#sidecar}/walk`, { method: 'POST', headers, body }).catch(
        (error: unknown) => {
          throw new LaneFailure('walk_refused', `POST /walk got no answer: ${networkReason(error)}`);
        },
      );
      const payload = (await answer.json().catch(() => ({}))) as { requestId?: string; error?: string };
      if (answer.status === 202 && typeof payload.requestId === 'string') {
        return { requestId: payload.requestId, busySince };
      }
      if (answer.status !== 409 && answer.status !== 429) throw walkRefusal(answer.status, payload.error);
      // Another walk (the in-container schedule, an operator) or the rate limit: wait for it.
      busySince ??= Date.now();
      // No Retry-After, or one of zero, waits 5 s: the lane polls a busy sidecar, never spins.
      const wait = Math.min(parseRetryAfter(answer.headers.get('retry-after')) || 5_000, this.#remaining());
      if (wait <= 0 || this.#remaining() <= wait) {
        throw new LaneFailure(
          'walk_busy',
          `POST /walk answered ${answer.status} (${payload.error ?? 'busy'}) for ${seconds(Date.now() - busySince)} until the lane's deadline`,
        );
      }
      await sleep(wait);
    }
  }

  /** GET /walk-status/{id}, backing off, until the walk's terminal state. */
  async #followWalk(requestId: string, headers: Record<string, string>): Promise<Walked> {
    let pollMs = 250;
    for (;;) {
      await sleep(Math.min(pollMs, this.#remaining()));
      pollMs = Math.min(WALK_POLL_MAX_MS, pollMs * 1.5);
      if (this.#remaining() === 0) {
        throw new LaneFailure(
          'walk_timeout',
          `walk ${requestId} had not ended when the lane's deadline passed; it goes on in the sidecar (GET /walk-status/${requestId})`,
        );
      }
      const answer = await this.#request(`${this.#sidecar}/walk-status/${encodeURIComponent(requestId)}`, {
        headers,
      }).catch(() => null);
      if (answer === null) continue; // a slow answer under a heavy walk: ask again
      if (answer.status === 429) {
        await answer.body?.cancel();
        continue;
      }
      if (answer.status === 404) {
        throw new LaneFailure(
          'walk_status_lost',
          `GET /walk-status/${requestId} answered 404 (evicted, or the sidecar restarted)`,
        );
      }
      if (answer.status !== 200) {
        await answer.body?.cancel();
        throw new LaneFailure('walk_status_refused', `GET /walk-status/${requestId} answered HTTP ${answer.status}`);
      }
      const entry = (await answer.json()) as { state: string; opId?: string; counts?: Record<string, number> };
      if (entry.state === 'accepted' || entry.state === 'running') continue;
      this.#report.requestId = requestId;
      if (entry.opId !== undefined) this.#report.opId = entry.opId;
      if (entry.counts !== undefined) this.#report.counts = entry.counts;
      if (entry.state === 'completed') return { requestId, opId: entry.opId ?? null, counts: entry.counts ?? {} };
      throw walkEnded(requestId, entry.state);
    }
  }

  /** The run's pipeline_runs row and rows (rows-landed.ts), or the walk-status counts on the embedded database. */
  async #rowsLanded(): Promise<string> {
    const { config } = this.#options;
    const done = this.#walked!;
    let facts: RunFacts;
    if (config.database.dsn === null) {
      facts = { source: 'walk-status', status: 'completed', counts: done.counts };
    } else {
      if (done.opId === null) throw new LaneFailure('run_row_missing', 'the completed walk reported no op id');
      const waitMs = Math.min(this.#options.ledgerWaitMs ?? LEDGER_WAIT_MS, this.#remaining());
      facts = await readLedger(config, done.opId, waitMs);
    }
    this.#report.source = facts.source;
    this.#report.counts = facts.counts;
    const problems = judgeRun({ ...facts, expectedVersion: config.imageSha });
    if (problems.length > 0) throw new LaneFailure(problems[0]!.code, describeProblems(problems));
    return facts.source === 'pipeline_runs'
      ? `pipeline_runs op ${done.opId}: completed, extractor_version ${facts.extractorVersion}; ${describeCounts(facts.counts)}` +
          `${describeRowsOfRun(facts.rowsOfRun ?? {})}`
      : `from the walk-status counts (pipeline_runs is not readable on the embedded database: ` +
          `set ENGINE_DB_DSN to read the ledger): ${describeCounts(facts.counts)}`;
  }
}

export function runNightlyLane(options: LaneOptions): Promise<LaneReport> {
  return new NightlyLane(options).run();
}

/** POST /walk's answer other than accepted or busy, as the lane's failure. */
function walkRefusal(status: number, error: string | undefined): LaneFailure {
  if (status === 401) {
    return new LaneFailure(
      'trigger_refused',
      "POST /walk answered 401: the lane's PIPELINE_TRIGGER_SECRET is not the sidecar's",
    );
  }
  if (status === 503) {
    return new LaneFailure('trigger_disabled', 'POST /walk answered 503: the sidecar has no PIPELINE_TRIGGER_SECRET');
  }
  return new LaneFailure('walk_refused', `POST /walk answered HTTP ${status} (${error ?? 'no error name'})`);
}

/** A walk's terminal state other than completed, as the lane's failure. */
function walkEnded(requestId: string, state: string): LaneFailure {
  if (state === 'fence_busy') {
    return new LaneFailure(
      'fence_busy',
      `walk ${requestId} ended fence_busy: another corpus writer held the writer fence, no pass was made`,
    );
  }
  return new LaneFailure('walk_failed', `walk ${requestId} ended ${state} (the sidecar's log has the reason)`);
}

/** Reads the run's ledger row (waiting a bounded time for a webhook-written one) and its rows. */
async function readLedger(
  config: Pick<Config, 'database'>,
  opId: string,
  waitMs: number,
): Promise<RunFacts & { source: 'pipeline_runs' }> {
  let db: Database;
  try {
    db = await openDatabase(config, { bootstrap: false });
  } catch (error) {
    throw new LaneFailure('database_unreachable', `ENGINE_DB_DSN could not be opened: ${(error as Error).message}`);
  }
  try {
    const until = Date.now() + waitMs;
    let row = await readRunRow(db, opId);
    while ((row === null || row.status === 'in_progress') && Date.now() < until) {
      await sleep(500);
      row = await readRunRow(db, opId);
    }
    if (row === null) {
      throw new LaneFailure(
        'run_row_missing',
        `pipeline_runs has no row for op ${opId} (the run record did not reach the database this lane reads)`,
      );
    }
    return {
      source: 'pipeline_runs',
      status: row.status,
      counts: row.counts,
      extractorVersion: row.extractorVersion,
      rowsOfRun: await rowsOfRun(db, opId, row.counts),
      documents: await documentCount(db),
    };
  } finally {
    await db.close();
  }
}

function describeProblems(problems: readonly Problem[]): string {
  // The first problem's code names the failure; the others follow by name.
  return [problems[0]!.message, ...problems.slice(1).map((p) => `${p.code}: ${p.message}`)].join('; ');
}

function describeRowsOfRun(rows: Record<string, number>): string {
  const entries = Object.entries(rows);
  return entries.length === 0 ? '' : `; rows with this op_id: ${entries.map(([t, n]) => `${t} ${n}`).join(', ')}`;
}
