// Watch mode (docs/behaviour/stages.md#watch-mode; stage 1 walks the corpus "live"): an initial
// walk, then one walk per burst of changes. The watcher only says *that* something changed under
// the corpus; what changed is found by the walk itself, the same incremental walk as `ingest walk`
// (an unchanged file costs a stat), so whatever the kernel reported, merged or dropped, each walk
// leaves the database matching the folder as it was when that walk listed it.
//
// - A burst is coalesced: a walk starts once events have been quiet for `quietMs`, and at the
//   latest `maxDelayMs` after the burst's first event (a build writing for minutes still walks).
// - Single-flight: events that arrive during a walk make exactly one follow-up walk.
// - Reconcile: every `reconcileMs` without a walk, a walk runs anyway. inotify drops events when
//   its queue overflows (@parcel/watcher passes over IN_Q_OVERFLOW without a word) or a watch
//   limit is reached; this walk catches up, and says so when it finds something.
// - A busy writer fence (the sidecar or a CLI walk on the same state store) is not a failure:
//   the walk is tried again a second later.
// - A new folder is walked twice. inotify watches a folder only from when the watcher adds it,
//   so files written into a folder just created (`cp -r`, `git checkout`, `mkdir -p a/b && echo >
//   a/b/c`) may raise no event of their own; a walk listing the folder while they are still
//   being written would miss them. So a burst that created a folder is followed by one more
//   walk once it has been quiet, which lists the folder complete.
// - Deleting is what the developer did: a walk after a burst in which the watcher saw files or
//   folders deleted may remove more than the mass-removal guard lets a blind walk remove
//   (stages/cleanup.ts). The guard is for a corpus that looks empty because its volume is not
//   there, which raises no delete events; the initial and reconcile walks keep it.
// - Feed URLs are the initial and reconcile walks' (engine/walk/walk.ts feedUrls): a save changes
//   files, never the ledger, and a walk per save fetching every passed URL is traffic for nothing.
//   The cleanup of unpassed URLs needs a walk that enumerated every passed one, so it goes with them.
// - stop() lets the walk in progress commit, and starts none after it.

import { stat } from 'node:fs/promises';
import path from 'node:path';
import watcher from '@parcel/watcher';
import type { Logger } from '../../lib/log.ts';
import type { WalkSummary } from '../walk/walk.ts';

export interface WatchOptions {
  sourcePath: string;
  quietMs: number;
  maxDelayMs: number;
  reconcileMs: number;
}

export type WatchReason = 'initial' | 'changes' | 'new_folder' | 'reconcile';

/** One walk of the watch, as it ended. */
export interface WatchedWalk {
  reason: WatchReason;
  /** Corpus-relative paths the events named, first few (the walk finds every change itself). */
  named: string[];
  /** How many distinct paths the events named. */
  namedCount: number;
  /** null: another writer held the fence, nothing was walked. */
  summary: WalkSummary | null;
  /** The walk threw (the database went away, the corpus root changed). */
  error?: Error;
}

/** What the events of the burst a walk is for told. */
export interface Burst {
  /** The watcher saw files or folders deleted (or moved away). */
  deletionsSeen: boolean;
  /**
   * The walk fetches the ledger's passed feed URLs (and may retract the rows of unpassed ones):
   * the initial and reconcile walks. A walk after a save reads the files alone: no saved file is
   * a feed URL, and fetching every URL on every save is the traffic the watch must not make.
   */
  feedUrls: boolean;
}

export interface Watch {
  /** Walks ended so far. */
  readonly walks: number;
  /** Resolves once no walk runs or is due, and no event came for `quietMs`. */
  settled(): Promise<void>;
  /** Stops watching; resolves after the walk in progress (if any) has committed. */
  stop(): Promise<void>;
}

const FENCE_RETRY_MS = 1_000;
const NAMED_KEPT = 5;

/** True for paths the walk never takes as documents: a dot segment (.git, editor swap and temp files). */
function hidden(relPath: string): boolean {
  return relPath.split(path.sep).some((segment) => segment.startsWith('.'));
}

/** Whether any of these paths is a folder now (a stat each, until the first). */
async function anyFolder(paths: Set<string>): Promise<boolean> {
  for (const candidate of paths) {
    const info = await stat(candidate).catch(() => null);
    if (info?.isDirectory()) return true;
  }
  return false;
}

/** The watch's state: the burst being gathered, the walk in progress, the timers. */
class CorpusWatch implements Watch {
  readonly #options: WatchOptions;
  readonly #walkOnce: (burst: Burst) => Promise<WalkSummary | null>;
  readonly #onWalk: (walk: WatchedWalk) => void;
  readonly #log: Logger;
  #subscription: watcher.AsyncSubscription | null = null;
  #walks = 0;
  #walking: Promise<void> | null = null;
  #stopped = false;
  /** When the first event of the burst not walked yet came; null: no burst. */
  #burstStartedAt: number | null = null;
  #lastEventAt = 0;
  #quietTimer: NodeJS.Timeout | null = null;
  #reconcileTimer: NodeJS.Timeout | null = null;
  /** Corpus-relative paths the burst's events named. */
  #named = new Set<string>();
  /** Paths the burst's events created: a folder among them asks for one more walk. */
  #created = new Set<string>();
  #deletionsSeen = false;
  /** No walk has fetched the feed URLs yet (the initial walk found the fence busy, or failed). */
  #feedUrlsOwed = true;
  #settledWaiters: (() => void)[] = [];

  constructor(
    options: WatchOptions,
    walkOnce: (burst: Burst) => Promise<WalkSummary | null>,
    onWalk: (walk: WatchedWalk) => void,
    log: Logger,
  ) {
    this.#options = options;
    this.#walkOnce = walkOnce;
    this.#onWalk = onWalk;
    this.#log = log;
  }

  get walks(): number {
    return this.#walks;
  }

  /** Subscribes, then starts the initial walk. */
  async start(): Promise<this> {
    // Subscribed before the initial walk, so that nothing saved during it is missed.
    this.#subscription = await watcher.subscribe(this.#options.sourcePath, (error, events) =>
      this.#onEvents(error, events),
    );
    this.#startWalk('initial');
    return this;
  }

  settled(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#settledWaiters.push(resolve);
      // Quiet is a span of time, not an event: look again once it may have passed.
      const check = () => {
        if (!this.#settledWaiters.includes(resolve)) return;
        if (this.#idle()) this.#wakeSettled();
        else setTimeout(check, this.#options.quietMs);
      };
      check();
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#quietTimer !== null) clearTimeout(this.#quietTimer);
    if (this.#reconcileTimer !== null) clearTimeout(this.#reconcileTimer);
    // Watches of folders deleted meanwhile are gone already; the kernel says EINVAL for them.
    await this.#subscription
      ?.unsubscribe()
      .catch((error: unknown) => this.#log.debug({ err: error }, 'watch: unsubscribed'));
    await this.#walking;
  }

  #idle(): boolean {
    return (
      this.#walking === null && this.#burstStartedAt === null && Date.now() - this.#lastEventAt >= this.#options.quietMs
    );
  }

  #wakeSettled(): void {
    if (!this.#idle()) return;
    const waiters = this.#settledWaiters;
    this.#settledWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #armReconcile(): void {
    if (this.#reconcileTimer !== null) clearTimeout(this.#reconcileTimer);
    this.#reconcileTimer = this.#stopped
      ? null
      : setTimeout(() => this.#startWalk('reconcile'), this.#options.reconcileMs);
  }

  /** A walk becomes due after `delayMs` (a burst's quiet period or deadline, a fence retry). */
  #schedule(delayMs: number, reason: 'changes' | 'new_folder' = 'changes'): void {
    if (this.#quietTimer !== null) clearTimeout(this.#quietTimer);
    this.#quietTimer = setTimeout(() => {
      this.#quietTimer = null;
      if (this.#walking === null) this.#startWalk(reason);
      // During a walk the burst waits; the walk's end starts the one follow-up.
    }, delayMs);
  }

  #onEvents(error: Error | null, events: watcher.Event[]): void {
    if (this.#stopped) return;
    const { sourcePath, quietMs, maxDelayMs } = this.#options;
    if (error !== null) {
      // The watcher lost track (a watch limit, a vanished root): the reconcile walk covers it.
      this.#log.warn({ err: error }, 'watch: the file watcher reported an error; walking to catch up');
    }
    const relevant = events.filter((event) => {
      const rel = path.relative(sourcePath, event.path);
      return rel !== '' && !rel.startsWith('..') && !hidden(rel);
    });
    if (relevant.length === 0 && error === null) return;
    for (const event of relevant) {
      this.#named.add(path.relative(sourcePath, event.path).split(path.sep).join('/'));
      if (event.type === 'create') this.#created.add(event.path);
      if (event.type === 'delete') this.#deletionsSeen = true;
    }
    const now = Date.now();
    this.#lastEventAt = now;
    this.#burstStartedAt ??= now;
    this.#schedule(Math.min(quietMs, Math.max(0, this.#burstStartedAt + maxDelayMs - now)));
  }

  /** Takes the burst gathered so far and walks for it, unless a walk runs or the watch stopped. */
  #startWalk(reason: WatchReason): void {
    if (this.#stopped || this.#walking !== null) return;
    if (this.#reconcileTimer !== null) clearTimeout(this.#reconcileTimer);
    if (this.#quietTimer !== null) clearTimeout(this.#quietTimer);
    this.#quietTimer = null;
    const named = [...this.#named];
    const created = this.#created;
    const burst: Burst = {
      deletionsSeen: reason !== 'reconcile' && this.#deletionsSeen,
      feedUrls: reason === 'reconcile' || this.#feedUrlsOwed,
    };
    this.#named = new Set();
    this.#created = new Set();
    this.#deletionsSeen = false;
    this.#burstStartedAt = null;
    this.#walking = this.#walk(reason, named, created, burst);
  }

  async #walk(reason: WatchReason, named: string[], created: Set<string>, burst: Burst): Promise<void> {
    const newFolder = await anyFolder(created);
    const walked: WatchedWalk = { reason, named: named.slice(0, NAMED_KEPT), namedCount: named.length, summary: null };
    try {
      walked.summary = await this.#walkOnce(burst);
    } catch (error) {
      walked.error = error as Error;
    }
    this.#walks += 1;
    if (burst.feedUrls && walked.summary?.status === 'completed') this.#feedUrlsOwed = false;
    try {
      this.#onWalk(walked);
    } catch (error) {
      this.#log.error({ err: error }, 'watch: reporting a walk failed');
    }
    this.#walking = null;
    if (this.#stopped) return;
    this.#scheduleAfter(walked, named, burst, newFolder);
    this.#armReconcile();
    this.#wakeSettled();
  }

  /** What a walk's end makes due: the burst again, a follow-up, or the new folder's second walk. */
  #scheduleAfter(walked: WatchedWalk, named: string[], burst: Burst, newFolder: boolean): void {
    if (walked.summary === null && walked.error === undefined) {
      // The fence was busy: this burst is not walked yet.
      for (const rel of named) this.#named.add(rel);
      this.#deletionsSeen ||= burst.deletionsSeen;
      this.#burstStartedAt ??= Date.now();
      this.#schedule(FENCE_RETRY_MS);
    } else if (this.#burstStartedAt !== null) {
      // Events came during the walk: one follow-up, once they are quiet.
      this.#schedule(Math.max(0, this.#lastEventAt + this.#options.quietMs - Date.now()));
    } else if (newFolder) {
      // Files may still have landed in the new folder without an event of their own.
      this.#burstStartedAt = Date.now();
      this.#schedule(this.#options.quietMs, 'new_folder');
    }
  }
}

export function watchCorpus(
  options: WatchOptions,
  walkOnce: (burst: Burst) => Promise<WalkSummary | null>,
  onWalk: (walk: WatchedWalk) => void,
  log: Logger,
): Promise<Watch> {
  return new CorpusWatch(options, walkOnce, onWalk, log).start();
}
