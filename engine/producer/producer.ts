// The producer as a flow of its own (docs/behaviour/stages.md#producer): one run
// at a time under its own lock (in this process, and across processes by a lease in the bundle
// directory), independent of the walk's; each run recorded like a walk's (a pipeline_runs row of
// flow 'producer', or the webhook), its failure logged and recorded, never a walk's.
//
// Chained after a walk: a clean walk starts a run while the producer is owed one. The debt is in
// the state store (lib/state/producer-debt.ts): a walk incurs it before the memo of its first
// change, whatever then becomes of the walk, and only a run that completes settles it, what was
// owed when it began. So a walk killed or failed after committing changes, a walk that ends
// while a run is going, and a run killed mid-way are all followed by another run (after the
// next clean walk, or at the sidecar's start), never forgotten.

import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../lib/config.ts';
import { openBucket } from '../../lib/bucket/index.ts';
import type { Database } from '../../lib/db/database.ts';
import { tryAcquireLease } from '../../lib/lease.ts';
import { llmIdentity, type LlmClient } from '../../lib/llm/client.ts';
import type { Logger } from '../../lib/log.ts';
import { emptyRunCounters, type RunContext } from '../../lib/run-context.ts';
import type { RunRecord, RunRecorder } from '../../lib/runs/record.ts';
import { SingleFlight } from '../../lib/single-flight.ts';
import { ProducerDebt } from '../../lib/state/producer-debt.ts';
import type { StateStore } from '../../lib/state/store.ts';
import type PQueue from 'p-queue';
import { produceBundle, type BundleMirror, type ProducerReport } from '../../stages/producer/index.ts';
import { finishRun, runRecord, settleEarlierRuns } from '../walk/run-record.ts';
import type { ItemCounts } from '../walk/tally.ts';
import { IngestError } from '../../lib/errors.ts';

export class ProducerBusyError extends IngestError {
  constructor(where: string) {
    super('producer_in_progress', `a producer run is already going ${where}`);
  }
}

/**
 * Where a run's record in progress waited before it joined the walks' (engine/walk/run-record.ts):
 * a state store written then may still hold one, which the next run settles like the others.
 */
const LEGACY_RUNNING_MEMO = 'producer:running';

export interface ProducerRunOptions {
  /** Every concept, bypassing the delta gate (POST /producer-run). */
  all: boolean;
  /** Ask the model again even for evidence the memo has a draft of. */
  redraft: boolean;
}

export interface ProducerOutcome {
  opId: string;
  status: 'completed' | 'failed';
  report?: ProducerReport;
  error?: string;
  durationMs: number;
}

export interface ProducerDeps {
  config: Config;
  db: Database;
  store: StateStore;
  log: Logger;
  runs: RunRecorder;
  llm: LlmClient;
  queue: PQueue;
}

export class Producer {
  readonly #deps: ProducerDeps;
  readonly #debt: ProducerDebt;
  readonly #flight = new SingleFlight(() => new ProducerBusyError('in this process'));
  #current: Promise<unknown> = Promise.resolve();
  #chained: Promise<unknown> = Promise.resolve();
  /** The runs the last walk chained, so far. */
  #lastChain: { walkOpId: string; runs: ProducerOutcome[] } | null = null;

  constructor(deps: ProducerDeps) {
    this.#deps = deps;
    this.#debt = new ProducerDebt(deps.store);
  }

  /**
   * Starts a run unless one is going in this process (ProducerBusyError, thrown at once).
   * `started` resolves once the run holds its lease too (else it rejects with ProducerBusyError,
   * another process running one); `done` when the run has ended.
   */
  start(options: ProducerRunOptions): { opId: string; started: Promise<void>; done: Promise<ProducerOutcome> } {
    const opId = randomUUID();
    let began = () => {};
    const holding = new Promise<void>((resolve) => (began = resolve));
    const done = this.#flight.run(() => this.#runUnderLease(opId, options, began));
    this.#current = done.catch(() => {});
    return { opId, started: Promise.race([holding, done.then(() => {})]), done };
  }

  /**
   * After a walk (docs/behaviour/stages.md#producer-chaining), in the background (idle() waits for
   * it): a clean walk runs the producer while it is owed a run (this walk's changes, or an earlier
   * walk's that no run has produced). A failed walk chains none; what it changed stays owed. A walk
   * that changed something incurs the debt once more as it ends: a run that began during the walk
   * settled only what was owed when it began.
   */
  chainAfter(summary: { opId: string; status: 'completed' | 'failed'; items: ItemCounts }): void {
    const { log } = this.#deps;
    const runs: ProducerOutcome[] = [];
    const chain = async () => {
      if (summary.items.changed + summary.items.removed > 0) await this.#debt.incur();
      if (summary.status === 'completed') await this.runWanted(runs);
    };
    this.#chained = Promise.all([this.#chained, chain()]).catch((error: unknown) => {
      if (error instanceof ProducerBusyError)
        log.info({ walk: summary.opId }, 'producer: a run is going; it takes this walk up');
      else log.error({ err: error, walk: summary.opId }, 'producer: the run after the walk could not start');
    });
    this.#lastChain = { walkOpId: summary.opId, runs };
  }

  /**
   * The runs chained after the walk `walkOpId`, once they ended (none when the walk chained none,
   * or when a later walk has chained since): `ingest walk` reports them.
   */
  async chainedAfter(walkOpId: string): Promise<readonly ProducerOutcome[]> {
    const chain = this.#lastChain;
    await this.#chained;
    return chain?.walkOpId === walkOpId ? chain.runs : [];
  }

  /** Runs while the producer is owed a run (also one a process that died left owed); each outcome goes to `outcomes`. */
  async runWanted(outcomes: ProducerOutcome[] = []): Promise<void> {
    while ((await this.#debt.owed()) !== undefined) {
      const outcome = await this.start({ all: false, redraft: false }).done;
      outcomes.push(outcome);
      if (outcome.status !== 'completed') return;
    }
  }

  /** Resolves once no run is going and no chained run is about to start. */
  async idle(): Promise<void> {
    await this.#chained;
    await this.#current;
  }

  async #runUnderLease(opId: string, options: ProducerRunOptions, began: () => void): Promise<ProducerOutcome> {
    const { config } = this.#deps;
    await mkdir(config.bundle.dir, { recursive: true });
    const hold = await tryAcquireLease(path.join(config.bundle.dir, '.producer.lease'), {
      staleMs: config.fenceStaleMs,
    });
    if (hold === null) throw new ProducerBusyError(`in another process (its lease is in ${config.bundle.dir})`);
    began();
    try {
      return await this.#recordedRun(opId, options);
    } finally {
      await hold.release();
    }
  }

  async #recordedRun(opId: string, options: ProducerRunOptions): Promise<ProducerOutcome> {
    const { config, db, store, log, runs, llm, queue } = this.#deps;
    await this.#settleAbandoned();
    // Read before the gate reads the rows: what was owed then is what this run produces.
    const owed = await this.#debt.owed();
    const started = new Date();
    const run: RunContext = { opId, fullReprocess: options.redraft, counters: emptyRunCounters() };
    const record = (status: 'in_progress' | 'completed' | 'failed', counts: object, error?: string) =>
      runRecord(config, {
        opId,
        flow: 'producer',
        status,
        startedAt: started.toISOString(),
        finishedAt: status === 'in_progress' ? null : new Date().toISOString(),
        counts: counts as Record<string, number>,
        counters: run.counters,
        ...(error === undefined ? {} : { error }),
      });
    await store.putUnsettledRun(record('in_progress', {}));
    await runs.start(record('in_progress', {}));
    const plog = log.child({ producerOpId: opId });
    plog.info(options, 'producer run started');
    let outcome: ProducerOutcome;
    try {
      const mirror = openMirror(config, plog);
      try {
        const report = await produceBundle(
          {
            db,
            store,
            model: {
              client: llm,
              model: config.models.producer,
              identity: llmIdentity(llm, config.models.producer),
              store,
              queue,
              run,
            },
            bundleDir: config.bundle.dir,
            mirror: mirror?.mirror ?? null,
            log: plog,
          },
          { opId, all: options.all, redraft: options.redraft, now: started },
        );
        outcome = { opId, status: 'completed', report, durationMs: Date.now() - started.getTime() };
      } finally {
        mirror?.close();
      }
      plog.info({ ...outcome.report, durationMs: outcome.durationMs }, 'producer run finished');
    } catch (error) {
      outcome = { opId, status: 'failed', error: (error as Error).message, durationMs: Date.now() - started.getTime() };
      plog.error({ err: error }, 'producer run failed; the published bundle stays as it was');
    }
    // Kept in the store until it lands: a run that lost its database ends failed once it can
    // write again, never in progress for ever.
    await finishRun(store, runs, record(outcome.status, outcome.report ?? {}, outcome.error));
    if (outcome.status === 'completed') await this.#debt.settle(owed);
    return outcome;
  }

  /** A producer record still in progress under the lease we now hold is a run whose process died. */
  async #settleAbandoned(): Promise<void> {
    const { store, runs, log } = this.#deps;
    const legacy = (await store.getMemo(LEGACY_RUNNING_MEMO)) as RunRecord | undefined;
    if (legacy !== undefined) {
      await store.putUnsettledRun({ ...legacy, flow: 'producer' });
      await store.removeMemo(LEGACY_RUNNING_MEMO);
    }
    await settleEarlierRuns(store, runs, log, 'producer');
  }
}

/** The corpus bucket's bundle prefix as the producer's mirror, when a bucket is configured. */
function openMirror(config: Config, log: Logger): { mirror: BundleMirror; close(): void } | null {
  const bucket = openBucket(config, log);
  if (bucket === null) return null;
  const prefix = config.bundle.bucketPrefix;
  return {
    mirror: {
      location: `${bucket.location}${prefix}`,
      upload: async (relPath, file) => void (await bucket.upload(prefix + relPath, file)),
      remove: (relPath) => bucket.remove(prefix + relPath),
    },
    close: () => bucket.close(),
  };
}
