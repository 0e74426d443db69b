// Stage 5 (i), entity resolution (docs/behaviour/stages.md#entity-resolution,
// docs/behaviour/states.md#curation-pins): a flow-scope pass after the settle barrier. Extraction
// already chained every known name under its root (known.ts); this pass decides the names met for
// the first time by the walks it has not been through (pending.ts), most frequent first:
//
//   candidates  the roots (entity_names rows naming themselves) of the same type that share
//               the normalised name or a trigram band, or whose embedding is among the nearest,
//               and those of another type whose name is near-identical (roots.ts), and the
//               names this pass has just founded; the best MAX_CANDIDATES by similarity
//               (candidates.ts)
//   decision    an identical normalised name of the same type joins its root with no model
//               call; otherwise the pair resolver (a memoised model call, pair-resolver.ts)
//               picks a candidate or none, and a name that joins a root of another type takes
//               that type; a name without candidates founds a root of its own. The questions
//               stay in flight up to the queue's concurrency, and no outcome depends on the
//               order their answers arrive (decide.ts)
//   write-back  write-back.ts: each batch's decisions in one transaction; once every name is
//               decided, the mentions of those that joined another root move, in one sweep
//               over the owners in bounded transactions
//   resumption  a pass that stops (its database gone, its process killed) leaves its ops
//               pending; the next pass over them starts from the same list of names, keeps
//               what the stopped one recorded, and ends where an uninterrupted pass would
//               (docs/DECISIONS.md "Stage 5 resumes to the same outcome"): the pass records its
//               names under the least of its ops, so that the next one knows them
//
// A walk never re-points a root (that is an admin merge), and every name maps to a root, so no
// mention chains through another name. Pinned canonicals are roots from the start (seeds), so
// new mentions chain under them. The model clients are built when the pass runs, inside the
// failStage5 swap (docs/behaviour/states.md#failure-directive), never at engine start.

import type PQueue from 'p-queue';
import type { Database } from '../../lib/db/database.ts';
import { pinnedMention } from '../../lib/db/tables.ts';
import { markOpsDone, pendingOps } from '../../lib/db/op-ledger.ts';
import { breaks, type FailStage5Mode } from '../../lib/failure-directive.ts';
import type { EmbeddingClient } from '../../lib/embed/client.ts';
import { llmIdentity, type LlmClient } from '../../lib/llm/client.ts';
import type { Logger } from '../../lib/log.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { textEmbedder } from '../embed.ts';
import { PassDecisions } from './decide.ts';
import { recordNames, rootOf } from './roots.ts';
import { RESOLUTION_LEDGER, waitingNames } from './pending.ts';
import { ItemKeys, moveJoined } from './write-back.ts';

export interface ResolveDeps {
  store: StateStore;
  model: string;
  queue: PQueue;
  /**
   * The clients' factories: they read the environment as the pass finds it; `broken`, a
   * failStage5 directive's sentinel for credentials (lib/failure-directive.ts).
   */
  llm: (broken: boolean) => LlmClient;
  embedder: (broken: boolean) => EmbeddingClient;
  /** Hears each batch recorded and the moves' start and end, at debug level. */
  log: Logger;
}

/** What the pass did, as counts of the walk (snake_case, as the run record carries them). */
export interface ResolutionReport {
  names: number;
  /** Joined a root by an identical normalised name, with no model call. */
  joined_exact: number;
  /** Joined a root on the pair resolver's word. */
  joined_by_resolver: number;
  founded: number;
  resolver_asked: number;
  mentions_moved: number;
}

/** `_opId`, the walk's, is not what the pass records its names under: see `stamp` below. */
export async function resolveEntities(
  db: Database,
  deps: ResolveDeps,
  _opId: string,
  failStage5: FailStage5Mode | null = null,
): Promise<ResolutionReport> {
  const report: ResolutionReport = {
    names: 0,
    joined_exact: 0,
    joined_by_resolver: 0,
    founded: 0,
    resolver_asked: 0,
    mentions_moved: 0,
  };
  const ops = await pendingOps(db, RESOLUTION_LEDGER);
  if (ops.length === 0) return report;
  // The least op: one of the walks whose mentions the pass decides, and the same at every try
  // over these ops, so a pass after a stopped one knows the names it recorded (pending.ts).
  const stamp = ops[0]!;
  const llm = deps.llm(breaks(failStage5, 'llm'));
  const embedder = deps.embedder(breaks(failStage5, 'embedder'));
  const embed = textEmbedder({ client: embedder, queue: deps.queue });
  await seedPinnedRoots(db, embed, stamp);
  const decisions = new PassDecisions(
    db,
    embed,
    { client: llm, model: deps.model, identity: llmIdentity(llm, deps.model), store: deps.store, queue: deps.queue },
    stamp,
    deps.log,
  );
  const joined = await decisions.decide(await waitingNames(db, ops));
  Object.assign(report, decisions.counts);
  deps.log.debug({ joined: joined.length }, 'entity resolution decisions recorded; mentions moving');
  const keys = new ItemKeys(deps.store);
  report.mentions_moved = await moveJoined(db, keys, joined, ops, embed);
  await keys.settle();
  deps.log.debug({ moved: report.mentions_moved }, 'entity resolution mentions moved');
  await markOpsDone(db, RESOLUTION_LEDGER, ops);
  return report;
}

/** Pinned canonicals not yet known as roots become roots, so that new mentions can chain under them. */
async function seedPinnedRoots(
  db: Database,
  embed: (names: string[]) => Promise<number[][]>,
  opId: string,
): Promise<void> {
  const { rows } = await db.query<{ entity_type: string; canonical_name: string }>(
    `SELECT DISTINCT m.entity_type, m.canonical_name FROM entity_mentions m
      WHERE ${pinnedMention('m')}
        AND NOT EXISTS (SELECT 1 FROM entity_names n WHERE n.entity_type = m.entity_type AND n.name = m.canonical_name)`,
  );
  if (rows.length === 0) return;
  const vectors = await embed(rows.map((r) => r.canonical_name));
  const seeds = rows.map((r, i) => rootOf({ type: r.entity_type, name: r.canonical_name }, vectors[i]!));
  // In one transaction: a root without its bands would be missed by the shingle block for good.
  await db.transaction((tx) =>
    recordNames(
      tx,
      seeds.map((s) => ({ ...s, root: s.name, rootType: s.type })),
      opId,
      'keep',
    ),
  );
}
