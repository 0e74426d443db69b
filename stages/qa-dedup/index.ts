// Stage 5 (ii), the Q&A dedup proposer (docs/behaviour/stages.md#qa-dedup-proposer): a flow-scope
// pass after entity resolution. It reads answered Q&A pairs and writes q_a_dedup_proposals rows,
// nothing else: a walk never merges or edits a Q&A row, the platform decides (status accepted or
// rejected) and the walk never touches a decided proposal again.
//
//   pending     the answered pairs of every walk (op_id) the proposer has not been through yet
//               (pending.ts): an unchanged walk finds none and writes nothing
//   candidates  per batch of pending pairs, one query (candidates.ts): the same normalised
//               question and answer (an index, so an exact repeat is never missed) and the
//               nearest pairs by their record_embeddings vector (question and answer embedded
//               together, through an HNSW index); always in another document
//   proposal    a candidate at similarity >= MIN_SIMILARITY, or an exact repeat; written with
//               the re-scoring of the batch's standing proposals in one transaction per batch
//               (write.ts), idempotent, so a pass cut short is simply done again
//
// The proposer calls no model: it reads the vectors stage 4 stored. It is stage 5 all the same,
// and a consumed failStage5 directive fails stage 5 for that walk
// (docs/behaviour/states.md#failure-directive), so with one armed the pass refuses its pending
// pairs and leaves them to the next walk.

import type { Database } from '../../lib/db/database.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import { findCandidates, type Proposal } from './candidates.ts';
import { markOpsDone, pendingOps } from '../../lib/db/op-ledger.ts';
import { pendingPairs, QA_DEDUP_LEDGER } from './pending.ts';
import { writeProposals } from './write.ts';
import { IngestError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';

/** Pending pairs per candidate query and per write transaction. */
export const BATCH_PAIRS = 250;
/**
 * The least cosine between two pairs' embeddings for a proposal. Tuned on the benchmark corpus
 * (bench/qa-dedup.ts, seed 1) and checked on a held-out seed: bench/README.md.
 */
export const MIN_SIMILARITY = 0.8;

export interface QaDedupReport {
  /** Answered pairs of pending walks examined. */
  pairs: number;
  /** Proposals written new (or re-scored while still proposed). */
  proposed: number;
  /** Proposed rows dropped because a changed pair no longer resembles the other. */
  withdrawn: number;
}

export class Stage5InjectedFailure extends IngestError {
  constructor(mode: FailStage5Mode) {
    super(
      'stage5_injected_failure',
      `stage 5 runs with its ${mode} credentials broken this walk (failStage5); the Q&A pairs wait for the next walk`,
    );
  }
}

/** `log` hears each batch recorded, at debug level. */
export async function proposeQaDuplicates(
  db: Database,
  opId: string,
  failStage5: FailStage5Mode | null,
  log?: Logger,
): Promise<QaDedupReport> {
  const report: QaDedupReport = { pairs: 0, proposed: 0, withdrawn: 0 };
  const ops = await pendingOps(db, QA_DEDUP_LEDGER);
  if (ops.length === 0) return report;
  if (failStage5 !== null) throw new Stage5InjectedFailure(failStage5);
  let batch = 0;
  for (const op of ops) {
    let after: string | null = null;
    for (;;) {
      const pairs = await pendingPairs(db, op, after, BATCH_PAIRS);
      if (pairs.length === 0) break;
      after = pairs[pairs.length - 1]!;
      report.pairs += pairs.length;
      const found: Proposal[] = await findCandidates(db, pairs, MIN_SIMILARITY);
      const written = await writeProposals(db, pairs, found, MIN_SIMILARITY, opId);
      // A boundary an operator (and the resumption tests) can see: the batches before it stay written.
      log?.debug({ batch, pairs: pairs.length, ...written }, 'Q&A dedup batch recorded');
      batch += 1;
      report.proposed += written.proposed;
      report.withdrawn += written.withdrawn;
      if (pairs.length < BATCH_PAIRS) break;
    }
  }
  await markOpsDone(db, QA_DEDUP_LEDGER, ops);
  return report;
}
