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

import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { openDatabase } from '../db/open.ts';
import { withDeadline } from '../deadline.ts';
import { checkTierEnvironment, createLlmClient, type LlmTier } from '../llm/client.ts';
import { describePreflight, preflightPing } from '../llm/preflight.ts';
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
export class LaneFailure extends Error {
  readonly code: string;
  readonly exitCode: 1 | 2;
  constructor(code: string, message: string, exitCode: 1 | 2 = 1) {
    super(message);
    this.name = 'LaneFailure';
    this.code = code;
    this.exitCode = exitCode;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
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

export async function runNightlyLane(options: LaneOptions): Promise<LaneReport> {
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const remaining = () => Math.max(0, deadline - Date.now());
  const sidecar = options.sidecarUrl.replace(/\/+$/, '');
  const bearer = options.config.secrets.pipelineTrigger;
  const report: LaneReport = {
    ok: false,
    exitCode: 1,
    tier: options.tier,
    sidecar: origin(sidecar),
    ms: 0,
    steps: [],
  };

  const step = async (name: StepName, work: () => Promise<string>): Promise<void> => {
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
      report.exitCode = failure.exitCode;
      report.failedStep = name;
    }
    outcome.ms = Date.now() - began;
    report.steps.push(outcome);
    options.onStep?.(outcome);
    if (!outcome.ok) throw STOP;
  };

  /** One request with its own bound inside the lane's deadline. */
  const request = (url: string, init: RequestInit = {}) =>
    withDeadline(Math.max(1, Math.min(REQUEST_TIMEOUT_MS, remaining())), (signal) => fetch(url, { ...init, signal }));

  /** Asks until `probe` settles or the bound passes; `probe` returns a retry reason or the step's detail. */
  const waitFor = async (
    boundMs: number,
    probe: () => Promise<{ done: string } | { retry: string }>,
    onTimeout: (reason: string, waitedMs: number) => LaneFailure,
  ): Promise<string> => {
    const began = Date.now();
    const until = began + Math.min(boundMs, remaining());
    for (;;) {
      const answer = await probe().catch((error: unknown) => {
        if (error instanceof LaneFailure) throw error;
        return { retry: networkReason(error) };
      });
      if ('done' in answer) return answer.done;
      if (Date.now() + 500 >= until) throw onTimeout(answer.retry, Date.now() - began);
      await sleep(500);
    }
  };

  const healthWait = options.healthWaitMs ?? HEALTH_WAIT_MS;
  let walked: { requestId: string; opId: string | null; counts: Record<string, number> } | null = null;

  try {
    await step('config', async () => {
      const { mismatches, notes } = checkTierEnvironment(options.tier);
      if (mismatches.length > 0) throw new LaneFailure('tier_mismatch', mismatches.join('; '), 2);
      if (bearer === null) {
        throw new LaneFailure(
          'trigger_secret_missing',
          "PIPELINE_TRIGGER_SECRET is unset: the lane cannot call POST /walk (use the sidecar's value)",
          2,
        );
      }
      const where = options.tier === 'vendor' ? "the SDK's default address" : origin(createLlmClient().baseURL);
      return `tier ${options.tier} (${where}); sidecar ${origin(sidecar)}; rows read from ${
        options.config.database.dsn === null ? 'the walk-status answer (embedded database)' : 'pipeline_runs'
      }${notes.map((note) => `; ${note}`).join('')}`;
    });

    if (options.tier === 'mock') {
      await step('mock_health', () => {
        const base = createLlmClient().baseURL.replace(/\/+$/, '');
        return waitFor(
          healthWait,
          async () => {
            const answer = await request(`${base}/health`);
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
      });
    } else {
      await step('preflight', async () => {
        const outcome = await preflightPing(options.config.models.extraction);
        if (!outcome.ok) {
          throw new LaneFailure(
            'preflight_failed',
            `${outcome.identity} (tier ${outcome.tier}): ${describePreflight(outcome)}`,
          );
        }
        return describePreflight(outcome);
      });
    }

    await step('sidecar_health', () =>
      waitFor(
        healthWait,
        async () => {
          const answer = await request(`${sidecar}/health`);
          await answer.body?.cancel();
          if (answer.status === 200) return { done: `${origin(sidecar)}/health answered 200` };
          if (answer.status === 503) {
            throw new LaneFailure(
              'sidecar_unhealthy',
              `${origin(sidecar)}/health answered 503: the engine thread died`,
            );
          }
          return { retry: `HTTP ${answer.status}` };
        },
        (reason, waited) =>
          new LaneFailure(
            'sidecar_unreachable',
            `${origin(sidecar)}/health did not answer 200 within ${seconds(waited)}: ${reason}`,
          ),
      ),
    );

    await step('walk', async () => {
      const headers = { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' };
      const body = JSON.stringify(options.fullReprocess ? { full_reprocess: true } : {});
      let requestId: string | null = null;
      let busySince: number | null = null;
      while (requestId === null) {
        const answer = await request(`${sidecar}/walk`, { method: 'POST', headers, body }).catch((error: unknown) => {
          throw new LaneFailure('walk_refused', `POST /walk got no answer: ${networkReason(error)}`);
        });
        const payload = (await answer.json().catch(() => ({}))) as { requestId?: string; error?: string };
        if (answer.status === 202 && typeof payload.requestId === 'string') {
          requestId = payload.requestId;
          break;
        }
        if (answer.status === 409 || answer.status === 429) {
          // Another walk (the in-container schedule, an operator) or the rate limit: wait for it.
          busySince ??= Date.now();
          const after = Number(answer.headers.get('retry-after'));
          const wait = Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 5_000, remaining());
          if (wait <= 0 || remaining() <= wait) {
            throw new LaneFailure(
              'walk_busy',
              `POST /walk answered ${answer.status} (${payload.error ?? 'busy'}) for ${seconds(Date.now() - busySince)} until the lane's deadline`,
            );
          }
          await sleep(wait);
          continue;
        }
        if (answer.status === 401) {
          throw new LaneFailure(
            'trigger_refused',
            "POST /walk answered 401: the lane's PIPELINE_TRIGGER_SECRET is not the sidecar's",
          );
        }
        if (answer.status === 503) {
          throw new LaneFailure(
            'trigger_disabled',
            'POST /walk answered 503: the sidecar has no PIPELINE_TRIGGER_SECRET',
          );
        }
        throw new LaneFailure(
          'walk_refused',
          `POST /walk answered HTTP ${answer.status} (${payload.error ?? 'no error name'})`,
        );
      }
      const waitedForBusy = busySince === null ? '' : ` (waited ${seconds(Date.now() - busySince)} for a running walk)`;
      let pollMs = 250;
      for (;;) {
        await sleep(Math.min(pollMs, remaining()));
        pollMs = Math.min(WALK_POLL_MAX_MS, pollMs * 1.5);
        if (remaining() === 0) {
          throw new LaneFailure(
            'walk_timeout',
            `walk ${requestId} had not ended when the lane's deadline passed; it goes on in the sidecar (GET /walk-status/${requestId})`,
          );
        }
        const answer = await request(`${sidecar}/walk-status/${encodeURIComponent(requestId)}`, { headers }).catch(
          () => null,
        );
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
        report.requestId = requestId;
        if (entry.opId !== undefined) report.opId = entry.opId;
        if (entry.counts !== undefined) report.counts = entry.counts;
        if (entry.state === 'completed') {
          walked = { requestId, opId: entry.opId ?? null, counts: entry.counts ?? {} };
          return `completed: request ${requestId}, op ${entry.opId ?? '?'}${waitedForBusy}`;
        }
        if (entry.state === 'fence_busy') {
          throw new LaneFailure(
            'fence_busy',
            `walk ${requestId} ended fence_busy: another corpus writer held the writer fence, no pass was made`,
          );
        }
        throw new LaneFailure(
          'walk_failed',
          `walk ${requestId} ended ${entry.state} (the sidecar's log has the reason)`,
        );
      }
    });

    await step('rows_landed', async () => {
      const done = walked!;
      let facts: RunFacts;
      if (options.config.database.dsn === null) {
        facts = { source: 'walk-status', status: 'completed', counts: done.counts };
      } else {
        if (done.opId === null) throw new LaneFailure('run_row_missing', 'the completed walk reported no op id');
        facts = await readLedger(
          options.config,
          done.opId,
          Math.min(options.ledgerWaitMs ?? LEDGER_WAIT_MS, remaining()),
        );
      }
      report.source = facts.source;
      report.counts = facts.counts;
      const problems = judgeRun({ ...facts, expectedVersion: options.config.imageSha });
      if (problems.length > 0) throw new LaneFailure(problems[0]!.code, describeProblems(problems));
      return facts.source === 'pipeline_runs'
        ? `pipeline_runs op ${done.opId}: completed, extractor_version ${facts.extractorVersion}; ${describeCounts(facts.counts)}` +
            `${describeRowsOfRun(facts.rowsOfRun ?? {})}`
        : `from the walk-status counts (pipeline_runs is not readable on the embedded database: ` +
            `set ENGINE_DB_DSN to read the ledger): ${describeCounts(facts.counts)}`;
    });

    report.ok = true;
    report.exitCode = 0;
  } catch (error) {
    if (error !== STOP) throw error;
  }
  report.ms = Date.now() - started;
  return report;
}

const STOP = Symbol('a step failed');

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
