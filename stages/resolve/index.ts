// Stage 5 (i), entity resolution (docs/behaviour/stages.md#entity-resolution,
// docs/behaviour/states.md#curation-pins): a flow-scope pass after the settle barrier. Extraction
// already chained every known name under its root (known.ts); this pass decides the names met for
// the first time by the walks it has not been through (pending.ts), most frequent first, a batch at
// a time:
//
//   candidates  the roots (entity_names rows naming themselves) of the same type that share
//               the normalised name or a trigram band, or whose embedding is among the nearest,
//               and those of another type whose name is near-identical (roots.ts), and the
//               names this batch has just founded; the best MAX_CANDIDATES by similarity
//   decision    an identical normalised name of the same type joins its root with no model
//               call; otherwise the pair resolver (a memoised model call, pair-resolver.ts)
//               picks a candidate or none, and a name that joins a root of another type takes
//               that type; a name without candidates founds a root of its own
//   write-back  write-back.ts: each batch's decisions in one transaction; once every name is
//               decided, the mentions of those that joined another root move, in one sweep
//               over the owners in bounded transactions
//
// A walk never re-points a root (that is an admin merge), and every name maps to a root, so no
// mention chains through another name. Pinned canonicals are roots from the start (seeds), so
// new mentions chain under them. The model clients are built when the pass runs, inside the
// failStage5 swap (docs/behaviour/states.md#failure-directive), never at engine start.

import type PQueue from 'p-queue';
import type { Database } from '../../lib/db/database.ts';
import { pinnedMention } from '../../lib/db/tables.ts';
import { markOpsDone, pendingOps } from '../../lib/db/op-ledger.ts';
import type { EmbeddingClient } from '../../lib/embed/client.ts';
import { llmIdentity, type LlmClient } from '../../lib/llm/client.ts';
import type { ExtractorContext } from '../../lib/llm/run-extractor.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { embedTexts } from '../embed.ts';
import { cosine, jaccard, trigrams } from './names.ts';
import { resolvePair } from './pair-resolver.ts';
import { MIN_COSINE, recordNames, rootOf, rootsNear, type Near, type Root } from './roots.ts';
import { RESOLUTION_LEDGER, waitingNames } from './pending.ts';
import { isRoot, ItemKeys, moveJoined, recordDecisions, type Decision, type Placed } from './write-back.ts';

export const BATCH_NAMES = 200;
export const MAX_CANDIDATES = 5;
/**
 * A root of another type is a candidate only this near: the same normalised name, or trigram
 * Jaccard at least this (a one-letter typo in a two-word name keeps about 0.6 of them). Only
 * the resolver joins it: two things of different kinds may share a name.
 */
export const NEAR_IDENTICAL = 0.5;

export interface ResolveDeps {
  store: StateStore;
  model: string;
  queue: PQueue;
  /** Zero-argument factories: the clients read the environment as the pass finds it. */
  llm: () => LlmClient;
  embedder: () => EmbeddingClient;
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

interface Pending {
  type: string;
  name: string;
}

export async function resolveEntities(db: Database, deps: ResolveDeps, opId: string): Promise<ResolutionReport> {
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
  const llm = deps.llm();
  const embedder = deps.embedder();
  const embed = (names: string[]) => embedTexts(names, { client: embedder, queue: deps.queue });
  const context: Asking = {
    client: llm,
    model: deps.model,
    identity: llmIdentity(llm, deps.model),
    store: deps.store,
    queue: deps.queue,
    report,
  };
  await seedPinnedRoots(db, embed, opId);
  const waiting = await waitingNames(db, ops);
  const joined: Placed[] = [];
  for (let at = 0; at < waiting.length; at += BATCH_NAMES) {
    const batch = waiting.slice(at, at + BATCH_NAMES);
    const undecided = batch.filter((w) => w.root === null);
    const decisions = undecided.length === 0 ? [] : await decide(db, undecided, embed, context);
    await recordDecisions(db, decisions, opId);
    const decided = new Map(decisions.map((d) => [`${d.type}\u0000${d.name}`, { name: d.root, type: d.rootType }]));
    for (const w of batch) {
      const root = w.root ?? decided.get(`${w.type}\u0000${w.name}`)!;
      if (!isRoot({ ...w, root: root.name, rootType: root.type })) joined.push({ type: w.type, name: w.name, root });
    }
  }
  const keys = new ItemKeys(deps.store);
  report.mentions_moved = await moveJoined(db, keys, joined, ops, embed);
  await keys.settle();
  await markOpsDone(db, RESOLUTION_LEDGER, ops);
  return report;
}

type Asking = ExtractorContext & { report: ResolutionReport };

/** Decides a batch of names no resolution has seen, in order: each joins a root or founds one. */
async function decide(
  db: Database,
  pending: readonly Pending[],
  embed: (names: string[]) => Promise<number[][]>,
  context: Asking,
): Promise<Decision[]> {
  const { report } = context;
  // The resolver's memo writes are awaited together once the batch is decided, not each before
  // its answer counts: an answer waiting for its own disk commit holds up every name near it
  // (20 ms a commit once the state store holds 10,000 documents).
  const memoWrites: Promise<unknown>[] = [];
  let memoFailure: { error: unknown } | null = null;
  const asking: Asking = {
    ...context,
    store: {
      getMemo: (key) => context.store.getMemo(key),
      removeMemo: (key) => context.store.removeMemo(key),
      putMemo: async (key, value) => {
        // Caught at once: a write that fails before the batch awaits them must not go unheard.
        memoWrites.push(context.store.putMemo(key, value).catch((error: unknown) => (memoFailure ??= { error })));
      },
    },
  };
  const vectors = await embed(pending.map((p) => p.name));
  const decisions: Decision[] = [];
  // Questions to the pair resolver run concurrently. A name put to it may yet join another
  // root, so until its answer is in (and drained, so the outcome never depends on the order
  // answers come in) it is no candidate; a later name near it waits for the questions out.
  const unanswered = new Set<Decision>();
  let questions: Promise<void>[] = [];
  // Held here, not left to reject unheard while the loop still runs: an unhandled rejection
  // ends the engine thread.
  let failure: { error: unknown } | null = null;
  const drain = async () => {
    await Promise.all(questions);
    questions = [];
    unanswered.clear();
  };
  const selves = pending.map((p, i): Decision => ({
    ...rootOf(p, vectors[i]!),
    root: p.name,
    rootType: p.type,
    how: 'founded',
  }));
  // Roots of earlier batches, for every name at once: one query, not one per name.
  const near = await rootsNear(db, selves);
  for (const [i, self] of selves.entries()) {
    if (failure !== null) break;
    const nearInBatch = (d: Decision) => nearness(self, d);
    if ([...unanswered].some((d) => nearInBatch(d) !== null)) await drain();
    const settled = decisions
      .filter((d) => d.how === 'founded' && !unanswered.has(d))
      .flatMap((d) => nearInBatch(d) ?? []);
    const candidates = rankCandidates(self, [...near[i]!, ...settled]);
    const exact = candidates.find((c) => c.type === self.type && c.normalised === self.normalised);
    if (exact !== undefined) Object.assign(self, { root: exact.name, how: 'exact' });
    decisions.push(self);
    if (exact !== undefined || candidates.length === 0) continue;
    unanswered.add(self);
    report.resolver_asked += 1;
    questions.push(
      resolvePair(self, candidates, asking).then(
        (match) => {
          if (match !== null) Object.assign(self, { root: match.name, rootType: match.type, how: 'resolver' });
        },
        (error: unknown) => {
          failure ??= { error };
        },
      ),
    );
  }
  await drain();
  await Promise.all(memoWrites);
  failure ??= memoFailure;
  if (failure !== null) throw (failure as { error: unknown }).error;
  for (const d of decisions) {
    report.names += 1;
    if (d.how === 'exact') report.joined_exact += 1;
    else if (d.how === 'resolver') report.joined_by_resolver += 1;
    else report.founded += 1;
  }
  return decisions;
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
  await recordNames(
    db,
    seeds.map((s) => ({ ...s, root: s.name, rootType: s.type })),
    opId,
    'keep',
  );
}

/**
 * `other`, a root this batch founded, as a candidate of `self` when a block would find it (as
 * rootsNear does): the normalised name or a band shared, or, of the same type, the embeddings
 * near. Null otherwise.
 */
function nearness(self: Root, other: Root): Near | null {
  const similarity = cosine(self.vector, other.vector);
  const found =
    other.normalised === self.normalised ||
    other.bands.some((b) => self.bands.includes(b)) ||
    (other.type === self.type && similarity >= MIN_COSINE);
  return found ? { type: other.type, name: other.name, normalised: other.normalised, cosine: similarity } : null;
}

/**
 * The best MAX_CANDIDATES of the roots found for a name: its normalised name first, then by
 * similarity; a root of another type only when its name is near-identical (NEAR_IDENTICAL),
 * and then by the names alone.
 */
export function rankCandidates(self: Root, found: readonly Near[]): Near[] {
  const grams = trigrams(self.normalised);
  const names = (c: Near) => (c.normalised === self.normalised ? 2 : jaccard(grams, trigrams(c.normalised)));
  const score = (c: Near) => (c.type === self.type ? Math.max(names(c), c.cosine) : names(c));
  return [...new Map(found.map((c) => [`${c.type}\u0000${c.name}`, c])).values()]
    .filter((c) => c.type === self.type || names(c) >= NEAR_IDENTICAL)
    .map((c) => ({ c, s: score(c) }))
    .sort((a, b) => b.s - a.s || (a.c.name < b.c.name ? -1 : a.c.name > b.c.name ? 1 : a.c.type < b.c.type ? -1 : 1))
    .slice(0, MAX_CANDIDATES)
    .map(({ c }) => c);
}
