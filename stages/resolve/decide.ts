// Stage 5 (i), the pass's names decided at the model's pace (docs/DECISIONS.md "Stage 5 at the
// model's pace"). Every name joins a root or founds one, in the pass's order (pending.ts: the most
// mentioned first), and nothing a name is asked waits for another answer:
//
//   candidates  the roots the database held when the name's batch searched it (roots.ts
//               rootsNear), and the names of the previous batch and of its own batch before it
//               that a block would find (candidates.ts nearness), however those are decided
//   asking      at once, so the questions of two batches share the queue and stay in flight up
//               to its concurrency, batch boundaries included
//   joining     a name picked by the resolver (or by an identical normalised name) is followed
//               to the root it is decided under, once it is: the pick is always an earlier name,
//               so this ends, and a root, once founded, is never re-pointed
//   batches     batch k searches the database once batch k-2 is recorded and before batch k-1 is,
//               so the roots it finds there are the same however the answers were timed; a
//               batch is recorded (write-back.ts recordDecisions) once each of its names is
//               decided, one batch after another
//
//   resumes   names a stopped pass over the same ops recorded come decided (pending.ts), in the
//             same places of the same batches, and stay the earlier names in memory of the
//             names after them; batch k's search leaves out the waiting list's roots of batches
//             k-1 and k, which such a pass may have recorded but an uninterrupted one had not
//             when batch k searched (docs/DECISIONS.md "Stage 5 resumes to the same outcome")
//
// So a name's question, its answer and its root depend on the names before it and on the
// answers, never on when an answer arrives, nor on whether the pass is a stopped one's resumption. Chaining is part of the rule: yes to A~B and B~C
// with no to A~C puts C under A when C is asked in the pass that asks B (C picks B, B joined A),
// and leaves C apart when it comes in a later pass, where B is no root and no candidate.

import type { Database } from '../../lib/db/database.ts';
import type { Logger } from '../../lib/log.ts';
import type { ExtractorContext } from '../../lib/llm/run-extractor.ts';
import { nearness, rankCandidates } from './candidates.ts';
import { resolvePair } from './pair-resolver.ts';
import type { WaitingName } from './pending.ts';
import { rootOf, rootsNear, type Near } from './roots.ts';
import { isRoot, recordDecisions, type Decision, type Placed } from './write-back.ts';

export const BATCH_NAMES = 200;

/** What the decisions came to, as the pass reports them (index.ts ResolutionReport). */
export interface DecisionCounts {
  names: number;
  joined_exact: number;
  joined_by_resolver: number;
  founded: number;
  resolver_asked: number;
}

/** A name of the pass on its way to a decision. */
interface Deciding {
  self: Decision;
  /** Settles, never rejects, once `self` holds the name's decision (or the pass failed). */
  decided: Promise<void>;
}

/** A batch of waiting names, each on its way (those decided before the pass already are), and those to record. */
interface Batch {
  waiting: readonly WaitingName[];
  names: Deciding[];
  asked: Decision[];
}

type Embed = (names: string[]) => Promise<number[][]>;

/**
 * The resolver's memo writes, held rather than awaited one by one: an answer waiting for its own
 * disk commit (20 ms a commit once the state store holds 10,000 documents) would hold back the
 * names that picked it. `settle` awaits those made so far and throws the first failure: before
 * each batch's record, and at the pass's end.
 */
class HeldMemoWrites {
  readonly #store: ExtractorContext['store'];
  readonly #writes: Promise<void>[] = [];
  #failure: { error: unknown } | null = null;

  constructor(store: ExtractorContext['store']) {
    this.#store = store;
  }

  /** The store the resolver reads and writes its memos through. */
  view(): ExtractorContext['store'] {
    return {
      getMemo: (key) => this.#store.getMemo(key),
      removeMemo: (key) => this.#store.removeMemo(key),
      putMemo: async (key, value) => {
        // Caught at once: a write that fails before the pass awaits them must not go unheard.
        this.#writes.push(
          this.#store.putMemo(key, value).catch((error: unknown) => {
            this.#failure ??= { error };
          }),
        );
      },
    };
  }

  async settle(): Promise<void> {
    await Promise.all(this.#writes);
    if (this.#failure !== null) throw this.#failure.error;
  }
}

export class PassDecisions {
  readonly #db: Database;
  readonly #embed: Embed;
  readonly #asking: ExtractorContext;
  readonly #memos: HeldMemoWrites;
  /** The op the pass records its names under (index.ts). */
  readonly #stamp: string;
  readonly #log: Logger;
  readonly #counts: DecisionCounts = {
    names: 0,
    joined_exact: 0,
    joined_by_resolver: 0,
    founded: 0,
    resolver_asked: 0,
  };
  /** Every name put on its way and every batch's record, so that the pass ends only once none is in flight. */
  readonly #all: Promise<void>[] = [];
  /** The first failure (a question, a search, a record): no question is asked after it. */
  #failure: { error: unknown } | null = null;

  constructor(db: Database, embed: Embed, context: ExtractorContext, stamp: string, log: Logger) {
    this.#db = db;
    this.#embed = embed;
    this.#memos = new HeldMemoWrites(context.store);
    this.#asking = { ...context, store: this.#memos.view() };
    this.#stamp = stamp;
    this.#log = log;
  }

  get counts(): DecisionCounts {
    return this.#counts;
  }

  /** Decides every waiting name; returns the names placed under another root, whose mentions move. */
  async decide(waiting: readonly WaitingName[]): Promise<Placed[]> {
    const joined: Placed[] = [];
    try {
      await this.#decideBatches(waiting, joined);
    } catch (error) {
      this.#failure ??= { error };
    }
    // Held here, not left to settle unheard: no question runs on past the pass.
    await Promise.all(this.#all);
    await this.#memos.settle();
    if (this.#failure !== null) throw this.#failure.error;
    return joined;
  }

  async #decideBatches(waiting: readonly WaitingName[], joined: Placed[]): Promise<void> {
    const batches: (readonly WaitingName[])[] = [];
    for (let at = 0; at < waiting.length; at += BATCH_NAMES) batches.push(waiting.slice(at, at + BATCH_NAMES));
    const undecided = (k: number) => (batches[k] ?? []).some((w) => w.root === null);
    // A batch's vectors serve its own names' questions and those of the batch after it.
    const vectorsOf = (k: number) => this.#vectorsOf(undecided(k) || undecided(k + 1) ? batches[k]! : []);
    let previous: Batch | null = null;
    let recordedBeforePrevious: Promise<void> = Promise.resolve();
    let vectors = vectorsOf(0);
    for (const [k, names] of batches.entries()) {
      const mine = await vectors;
      // Asked for before this batch's questions join the queue, so they do not wait behind them.
      vectors = vectorsOf(k + 1);
      const selves = mine.length === 0 ? [] : names.map((w, i) => selfOf(w, mine[i]!));
      const asked = selves.filter((self) => self.how === 'founded');
      await recordedBeforePrevious;
      if (this.#failure !== null) return;
      // Roots a stopped pass founded in the previous batch or this one are in the database now:
      // they are offered from memory, as an uninterrupted pass offers them.
      const hidden = [...(previous?.waiting ?? []), ...names].filter(
        (w) => w.root !== null && w.root.name === w.name && w.root.type === w.type,
      );
      const near = asked.length === 0 ? [] : await rootsNear(this.#db, asked, hidden);
      const batch: Batch = {
        waiting: names,
        names: this.#putOnTheirWay(selves, near, previous?.names ?? []),
        asked,
      };
      recordedBeforePrevious = previous === null ? Promise.resolve() : this.#record(previous, k - 1, joined);
      previous = batch;
    }
    await recordedBeforePrevious;
    if (previous !== null) await this.#record(previous, batches.length - 1, joined);
  }

  /** The vectors of a batch's names, asked for ahead; a failure is seen when they are awaited, or never if the pass stops first. */
  #vectorsOf(names: readonly WaitingName[]): Promise<number[][]> {
    const vectors = names.length === 0 ? Promise.resolve([]) : this.#embed(names.map((w) => w.name));
    vectors.catch(() => {});
    return vectors;
  }

  /**
   * Each name of a batch on its way, in the pass's order: a name decided before the pass as it
   * is, one to decide with its candidates among the names before it (`earlier`, then this
   * batch's) found at once. `near` holds the database's roots of the names to decide, in order.
   */
  #putOnTheirWay(selves: readonly Decision[], near: readonly Near[][], earlier: readonly Deciding[]): Deciding[] {
    const batch: Deciding[] = [];
    let asked = 0;
    for (const self of selves) {
      if (self.how === 'before') {
        batch.push({ self, decided: Promise.resolve() });
        continue;
      }
      const before = new Map<Near, Deciding>();
      for (const names of [earlier, batch])
        for (const other of names) {
          const found = nearness(self, other.self);
          if (found !== null) before.set(found, other);
        }
      const decided = this.#decideOne(self, near[asked++]!, before);
      this.#all.push(decided);
      batch.push({ self, decided });
    }
    return batch;
  }

  /**
   * Decides `self` among the roots its search found and the names before it near it (`before`),
   * whatever those are decided: asked at once, never waiting for another answer first. A name
   * picked goes under the root that name is decided under, once it is.
   */
  async #decideOne(self: Decision, found: readonly Near[], before: ReadonlyMap<Near, Deciding>): Promise<void> {
    try {
      const candidates = rankCandidates(self, [...found, ...before.keys()]);
      const exact = candidates.find((c) => c.type === self.type && c.normalised === self.normalised);
      let pick: Near | null = exact ?? null;
      if (exact === undefined && candidates.length > 0 && this.#failure === null) {
        this.#counts.resolver_asked += 1;
        pick = await resolvePair(self, candidates, this.#asking);
      }
      if (pick === null) return;
      const name = before.get(pick);
      if (name !== undefined) await name.decided;
      const root = name === undefined ? { root: pick.name, rootType: pick.type } : name.self;
      Object.assign(self, {
        root: root.root,
        rootType: root.rootType,
        how: exact === undefined ? 'resolver' : 'exact',
      });
    } catch (error) {
      this.#failure ??= { error };
    }
  }

  /** Records a batch (the `k`th) once each of its names is decided; its joined names go to `joined`. Never rejects. */
  #record(batch: Batch, k: number, joined: Placed[]): Promise<void> {
    const recorded = this.#recordWhenDecided(batch, k, joined);
    this.#all.push(recorded);
    return recorded;
  }

  async #recordWhenDecided(batch: Batch, k: number, joined: Placed[]): Promise<void> {
    await Promise.all(batch.names.map((d) => d.decided));
    if (this.#failure !== null) return;
    const decisions = batch.asked;
    try {
      // The answers behind a batch's record are kept first: a pass stopped after it (a full
      // disk under the state store, a kill) never asks those names again.
      await this.#memos.settle();
      if (decisions.length > 0) await recordDecisions(this.#db, decisions, this.#stamp);
    } catch (error) {
      this.#failure ??= { error };
      return;
    }
    // A boundary an operator (and the resumption tests) can see: the batches before it stay decided.
    this.#log.debug({ batch: k, recorded: decisions.length }, 'entity resolution batch recorded');
    for (const d of decisions) {
      this.#counts.names += 1;
      if (d.how === 'exact') this.#counts.joined_exact += 1;
      else if (d.how === 'resolver') this.#counts.joined_by_resolver += 1;
      else this.#counts.founded += 1;
    }
    const decided = new Map(decisions.map((d) => [`${d.type}\u0000${d.name}`, { name: d.root, type: d.rootType }]));
    for (const w of batch.waiting) {
      const root = w.root ?? decided.get(`${w.type}\u0000${w.name}`)!;
      if (!isRoot({ ...w, root: root.name, rootType: root.type })) joined.push({ type: w.type, name: w.name, root });
    }
  }
}

/** A waiting name as the pass holds it: to decide (founding its own root until it joins one), or decided before. */
function selfOf(w: WaitingName, vector: readonly number[]): Decision {
  return {
    ...rootOf(w, vector),
    root: w.root?.name ?? w.name,
    rootType: w.root?.type ?? w.type,
    how: w.root === null ? 'founded' : 'before',
  };
}
