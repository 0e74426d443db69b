// The walk, top to bottom as the data flows (docs/behaviour/stages.md#the-flow); this file
// holds its run record and summary, engine/walk/corpus-walk.ts the walk over the corpus:
//
//   single-flight -> earlier walks' run records settled -> run record (in_progress) -> idle
//   check -> bind the state store to the database -> refresh the entity-alias snapshot -> for
//   each source item (stage 1: files, then passed feed URLs):
//       a file: type by extension (else dropped) -> memo check by stat, inline (an unchanged
//       file ends here and takes no slot) -> at most `walk.inFlight` at a time, its life in
//       engine/item/file.ts: admit (bytes hash) -> convert -> identity -> chunk -> extract -> names under
//       their roots (stage 5 at extraction) -> embed ->
//       commit (rows durable -> stale keys deleted -> memo), its slot given up while its last
//       rows wait for the sink (item-slots.ts)
//       a URL: its life in engine/item/url.ts, in the same bounded queue
//   -> settle barrier (every item done, the sink drained) -> the known items of folders the
//   walk could not list count as seen (unlisted.ts) -> the flow-scope passes, each contained
//   (passes.ts: stage 5, URL backlink reconciliation, stale-row cleanup) -> run record
//   (terminal status and counts)
//
// In a distributed walk (INGEST_WALK_MODE=distributed) an item's slot is a job that a walk worker
// runs (engine/walk/distributed.ts), and the settle barrier waits for every job's outcome.
//
// One item's failure is tallied and logged and never fails the walk. An item's memo entry is
// committed only after its rows are durable (engine/item/commit.ts), so a walk killed at any instant loses
// no row and, run again, redoes exactly the items whose memo was not committed.
//
// A walk inside the writer fence writes through the fence's database (engine/walk/fence.ts):
// on PostgreSQL each of its transactions checks the fencing token, and a walk whose fence passed
// to another stops as a walk that lost the database does, and fails with fence_lost.

import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { SyncReport } from '../../lib/bucket/pull-sync.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import { assertEmbeddingModel, recordFirstEmbedding } from '../../lib/embed/recorded-model.ts';
import type { RunRecord, RunWarning } from '../../lib/runs/record.ts';
import { inRunContext, publishRunContext, type RunContext, type RunCounters } from '../../lib/run-context.ts';
import { observingStages } from '../item/at-stage.ts';
import type { WalkLifespan } from './walk-lifespan.ts';
import { finishRun, runRecord, settleEarlierRuns } from './run-record.ts';
import { walkCounts, WalkTally, type ItemCounts, type ItemFailure, type PassOutcome } from './tally.ts';
import { walkCorpus } from './corpus-walk.ts';
import type { WalkOptions } from './walk-options.ts';

export interface WalkSummary {
  opId: string;
  status: 'completed' | 'failed';
  idle: boolean;
  items: ItemCounts;
  /** The first failures in detail; items.failed has the count. */
  failures: ItemFailure[];
  rows: Record<string, number>;
  rowsDeleted: number;
  sync: SyncReport | null;
  counters: RunCounters;
  passes: PassOutcome[];
  /** What the operator must hear although the walk completed (a refused mass removal, an unlisted folder). */
  warnings: RunWarning[];
  /** Pages the walk's items had OCRed and the time it took (stages/ocr/). */
  ocr: { pages: number; ms: number };
  /** The failStage5 mode stage 5 ran under, if any (docs/behaviour/states.md#failure-directive). */
  stage5FailureInjected?: FailStage5Mode;
  error?: string;
  durationMs: number;
  /** Peak resident memory of this process so far (converter children are capped separately). */
  peakRssMb: number;
}

/**
 * One walk; a clean one that changed the corpus then chains a producer run in the background
 * (engine/producer/producer.ts). One at a time per lifespan (its walkLock); its items run in its own run
 * context, and with its own stage observer, whatever else this process is doing.
 */
export async function walk(lifespan: WalkLifespan, options: WalkOptions = {}): Promise<WalkSummary> {
  const summary = await lifespan.walkLock.run(() => {
    const run = publishRunContext(randomUUID(), options.fullReprocess === true);
    const { observeStage } = options;
    const once = () => walkOnce(lifespan, run, options);
    return inRunContext(run, observeStage === undefined ? once : () => observingStages(observeStage, once));
  });
  if (lifespan.config.producer.afterWalk) lifespan.producer.chainAfter(summary);
  return summary;
}

async function walkOnce(lifespan: WalkLifespan, run: RunContext, options: WalkOptions): Promise<WalkSummary> {
  const { config } = lifespan;
  const started = Date.now();
  const { log } = lifespan;
  const tally = new WalkTally(run.counters, log);
  const sync = options.sync ?? null;
  let status: WalkSummary['status'] = 'completed';
  let error: string | undefined;
  const record = (recordStatus: RunRecord['status'], finishedAt: string | null): RunRecord =>
    runRecord(config, {
      opId: run.opId,
      status: recordStatus,
      startedAt: new Date(started).toISOString(),
      finishedAt,
      counts: walkCounts({ ...tally, sync }),
      counters: run.counters,
      warnings: tally.warnings,
      ...(error === undefined ? {} : { error }),
    });

  await settleEarlierRuns(lifespan.store, lifespan.runs, log, 'walk');
  const opening = record('in_progress', null);
  await lifespan.store.putUnsettledRun(opening);
  await lifespan.runs.start(opening);
  log.info({ fullReprocess: run.fullReprocess }, 'walk started');
  const sourcePath = options.sourcePath === undefined ? config.sourcePath : options.sourcePath;
  const idle = sourcePath === null || !(await isDirectory(sourcePath));
  if (idle) {
    log.info({ sourcePath }, 'idle: no corpus directory, nothing to walk');
  } else {
    try {
      const db = options.fence?.fenced(lifespan.db) ?? lifespan.db;
      await assertEmbeddingModel(db, lifespan.models.embedder.embeddingModel.name);
      await walkCorpus({ ...lifespan, db }, sourcePath, { run, tally, log, options });
      // Derivable from the vectors until written (lib/embed/recorded-model.ts), so a database gone
      // by now fails this walk no more than the contained passes it just failed did.
      await recordFirstEmbedding(db).catch((error: unknown) =>
        log.warn({ err: error }, 'the embedding model is not recorded yet; a later walk records it'),
      );
    } catch (failure) {
      status = 'failed';
      error = (failure as Error).message;
      log.error({ err: failure }, 'walk failed');
    }
  }
  await finishRun(lifespan.store, lifespan.runs, record(status, new Date().toISOString()));
  const summary: WalkSummary = {
    opId: run.opId,
    status,
    idle,
    items: tally.items,
    failures: tally.failures,
    rows: tally.rows,
    rowsDeleted: tally.rowsDeleted,
    sync,
    counters: run.counters,
    passes: tally.passes,
    warnings: tally.warnings,
    ocr: tally.ocr,
    ...(tally.stage5FailureInjected === null ? {} : { stage5FailureInjected: tally.stage5FailureInjected }),
    ...(error === undefined ? {} : { error }),
    durationMs: Date.now() - started,
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  log.info({ status, items: summary.items, rows: summary.rows, durationMs: summary.durationMs }, 'walk finished');
  return summary;
}

async function isDirectory(dir: string): Promise<boolean> {
  return stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
