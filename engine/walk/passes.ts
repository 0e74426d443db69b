// The flow-scope passes (docs/behaviour/stages.md#stage-5-flow-scope-passes): after the settle
// barrier, in order, each contained: a failure is logged and recorded in the walk's tally, and the
// walk goes on with the next pass and ends with its own status. Stage 5 (entity resolution, then
// the Q&A dedup proposer) comes as passes given to the lifespan; the URL backlink reconciliation
// and the stale-row cleanup always run last.
//
// A lost writer fence and a full disk are the failures no pass contains: they end the walk.
//
// A consumed failStage5 directive (docs/behaviour/states.md#failure-directive) reaches the passes
// in their context: stage 5 builds its clients with the sentinel credentials for this walk only
// (lib/failure-directive.ts).

import type { Database } from '../../lib/db/database.ts';
import { isFenceLost } from '../../lib/db/fenced.ts';
import { isStorageFull, storageStop } from '../../lib/storage-full.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import type { Logger } from '../../lib/log.ts';
import type { RunContext } from '../../lib/run-context.ts';
import type { WalkDebt } from '../../lib/state/producer-debt.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { reconcileUrlBacklinks } from '../../stages/backlink.ts';
import { removeVanishedDocuments, type RemovalGuard } from '../../stages/cleanup.ts';
import { resolveEntities, type ResolveDeps } from '../../stages/resolve/index.ts';
import { proposeQaDuplicates } from '../../stages/qa-dedup/index.ts';
import type { LiveItems } from './live-items.ts';
import type { WalkTally } from './tally.ts';

/** A flow-scope pass run after the settle barrier (stage 5, Q&A dedup, backlink, ...). */
export interface FlowPass {
  readonly name: string;
  /** May return counts of what it did: they join the walk's counts as <pass name>_<count>. */
  run(context: PassContext): Promise<object | void>;
}

export interface PassContext {
  db: Database;
  log: Logger;
  run: RunContext;
  /** The failStage5 directive this walk consumed, if any: stage 5 fails with it (docs/behaviour/states.md). */
  failStage5: FailStage5Mode | null;
}

export interface PassDeps {
  db: Database;
  guard: RemovalGuard;
  store: StateStore;
  log: Logger;
  run: RunContext;
  live: LiveItems;
  tally: WalkTally;
  /** What the walk owes the producer: the cleanup incurs it before removing a document's rows. */
  debt: WalkDebt;
  /** The walk enumerated the ledger's passed URLs: only then may the cleanup retract a URL's rows. */
  feedUrls: boolean;
}

export async function runFlowPasses(
  passes: readonly FlowPass[],
  deps: PassDeps,
  failStage5: FailStage5Mode | null,
): Promise<void> {
  deps.tally.stage5FailureInjected = failStage5;
  for (const pass of [...passes, backlinkPass(deps), cleanupPass(deps)]) await runContained(pass, deps, failStage5);
}

async function runContained(
  pass: FlowPass,
  { db, log, run, tally }: PassDeps,
  failStage5: FailStage5Mode | null,
): Promise<void> {
  log.debug({ pass: pass.name }, 'flow-scope pass started');
  const started = performance.now();
  const durationMs = () => Math.round(performance.now() - started);
  try {
    const counts = await pass.run({ db, log, run, failStage5 });
    tally.passes.push({
      name: pass.name,
      ok: true,
      durationMs: durationMs(),
      ...(counts ? { counts: counts as Record<string, number> } : {}),
    });
  } catch (error) {
    const message = (error as Error).message;
    tally.passes.push({ name: pass.name, ok: false, durationMs: durationMs(), error: message });
    // Not contained: a walk that lost the writer fence may write nothing more, and on a full disk
    // every pass after would fail the same way; the walk stops here, and the next one finishes
    // what this pass began (docs/OPERATIONS.md "When the disk is full").
    if (isFenceLost(error)) throw error;
    if (isStorageFull(error)) throw storageStop(error);
    // The operator hears of it where they look, the run record and /walk-status, not only in the log.
    tally.warnings.push({ name: `${pass.name}_failed`, message });
    log.error({ pass: pass.name, err: error }, 'flow-scope pass failed; the walk goes on');
  }
}

/** Stage 5 (i): entity resolution over the names this walk met for the first time. */
export const entityResolutionPass = (deps: ResolveDeps): FlowPass => ({
  name: 'entity_resolution',
  async run({ db, log, run, failStage5 }) {
    const report = await resolveEntities(db, deps, run.opId, failStage5);
    if (report.names > 0) log.info(report, 'entity resolution');
    return report;
  },
});

/**
 * Stage 5 (ii): the Q&A dedup proposer over the pairs of walks it has not been through. It
 * calls no model, so a failStage5 directive reaches it through the pass context, not through
 * the credentials.
 */
export const qaDedupPass = (): FlowPass => ({
  name: 'qa_dedup',
  async run({ db, log, run, failStage5 }) {
    const report = await proposeQaDuplicates(db, run.opId, failStage5, log);
    if (report.pairs > 0) log.info(report, 'Q&A dedup proposals');
    return report;
  },
});

const backlinkPass = ({ db, live, log }: PassDeps): FlowPass => ({
  name: 'url_backlink',
  async run() {
    await reconcileUrlBacklinks(db, live.landedReferenceIds, log);
  },
});

const cleanupPass = ({ db, store, live, tally, guard, log, debt, feedUrls }: PassDeps): FlowPass => ({
  name: 'cleanup',
  async run() {
    const listed = tally.items.seen + tally.items.skipped;
    const result = await removeVanishedDocuments(db, store, { ...live, listed, feedUrls }, guard, () =>
      debt.incurOnce(),
    );
    tally.items.removed = result.itemsRemoved;
    tally.rowsDeleted += result.rowsDeleted;
    if (result.refused !== undefined) {
      const { vanished, known } = result.refused;
      const warning = {
        name: 'mass_removal_refused',
        message:
          `${vanished} of ${known} known items are gone from the corpus (it listed ${listed}); their rows were kept. ` +
          'If they are really gone, walk once allowing it (--allow-mass-removal, POST /walk {"allow_mass_removal": true})',
      };
      tally.warnings.push(warning);
      log.warn({ vanished, known, listed }, warning.message);
    }
  },
});
