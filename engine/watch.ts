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
// - stop() lets the walk in progress commit, and starts none after it.

import { stat } from 'node:fs/promises';
import path from 'node:path';
import watcher from '@parcel/watcher';
import type { Logger } from '../lib/log.ts';
import type { WalkSummary } from './walk.ts';

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

export async function watchCorpus(
  options: WatchOptions,
  walkOnce: (burst: Burst) => Promise<WalkSummary | null>,
  onWalk: (walk: WatchedWalk) => void,
  log: Logger,
): Promise<Watch> {
  let walks = 0;
  let walking: Promise<void> | null = null;
  let stopped = false;
  let burstStartedAt: number | null = null;
  let lastEventAt = 0;
  let quietTimer: NodeJS.Timeout | null = null;
  let reconcileTimer: NodeJS.Timeout | null = null;
  let named = new Set<string>();
  /** Paths the burst's events created: a folder among them asks for one more walk. */
  let created = new Set<string>();
  let deletionsSeen = false;
  let settledWaiters: (() => void)[] = [];

  const idle = () => walking === null && burstStartedAt === null && Date.now() - lastEventAt >= options.quietMs;
  const wakeSettled = () => {
    if (!idle()) return;
    const waiters = settledWaiters;
    settledWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const armReconcile = () => {
    if (reconcileTimer !== null) clearTimeout(reconcileTimer);
    reconcileTimer = stopped ? null : setTimeout(() => startWalk('reconcile'), options.reconcileMs);
  };

  /** A burst's walk becomes due: after the quiet period, or at its deadline. */
  const schedule = (delayMs: number) => {
    if (quietTimer !== null) clearTimeout(quietTimer);
    quietTimer = setTimeout(() => {
      quietTimer = null;
      if (walking === null) startWalk('changes');
      // During a walk the burst waits; the walk's end starts the one follow-up.
    }, delayMs);
  };

  const onEvents = (error: Error | null, events: watcher.Event[]) => {
    if (stopped) return;
    if (error !== null) {
      // The watcher lost track (a watch limit, a vanished root): the reconcile walk covers it.
      log.warn({ err: error }, 'watch: the file watcher reported an error; walking to catch up');
    }
    const relevant = events.filter((event) => {
      const rel = path.relative(options.sourcePath, event.path);
      return rel !== '' && !rel.startsWith('..') && !hidden(rel);
    });
    if (relevant.length === 0 && error === null) return;
    for (const event of relevant) {
      named.add(path.relative(options.sourcePath, event.path).split(path.sep).join('/'));
      if (event.type === 'create') created.add(event.path);
      if (event.type === 'delete') deletionsSeen = true;
    }
    const now = Date.now();
    lastEventAt = now;
    burstStartedAt ??= now;
    schedule(Math.min(options.quietMs, Math.max(0, burstStartedAt + options.maxDelayMs - now)));
  };

  function startWalk(reason: WatchReason): void {
    if (stopped || walking !== null) return;
    if (reconcileTimer !== null) clearTimeout(reconcileTimer);
    if (quietTimer !== null) clearTimeout(quietTimer);
    quietTimer = null;
    const took = [...named];
    const createdNow = created;
    const burst: Burst = { deletionsSeen: reason !== 'reconcile' && deletionsSeen };
    named = new Set();
    created = new Set();
    deletionsSeen = false;
    burstStartedAt = null;
    walking = (async () => {
      const newFolder = await anyFolder(createdNow);
      const walked: WatchedWalk = {
        reason,
        named: took.slice(0, NAMED_KEPT),
        namedCount: took.length,
        summary: null,
      };
      try {
        walked.summary = await walkOnce(burst);
      } catch (error) {
        walked.error = error as Error;
      }
      walks += 1;
      try {
        onWalk(walked);
      } catch (error) {
        log.error({ err: error }, 'watch: reporting a walk failed');
      }
      walking = null;
      if (stopped) return;
      if (walked.summary === null && walked.error === undefined) {
        // The fence was busy: this burst is not walked yet.
        for (const rel of took) named.add(rel);
        deletionsSeen ||= burst.deletionsSeen;
        burstStartedAt ??= Date.now();
        schedule(FENCE_RETRY_MS);
      } else if (burstStartedAt !== null) {
        // Events came during the walk: one follow-up, once they are quiet.
        schedule(Math.max(0, lastEventAt + options.quietMs - Date.now()));
      } else if (newFolder) {
        // Files may still have landed in the new folder without an event of their own.
        burstStartedAt = Date.now();
        quietTimer = setTimeout(() => {
          quietTimer = null;
          if (walking === null) startWalk('new_folder');
        }, options.quietMs);
      }
      armReconcile();
      wakeSettled();
    })();
  }

  // Subscribed before the initial walk, so that nothing saved during it is missed.
  const subscription = await watcher.subscribe(options.sourcePath, onEvents);
  startWalk('initial');

  return {
    get walks() {
      return walks;
    },
    settled() {
      return new Promise<void>((resolve) => {
        settledWaiters.push(resolve);
        // Quiet is a span of time, not an event: look again once it may have passed.
        const check = () => {
          if (!settledWaiters.includes(resolve)) return;
          if (idle()) wakeSettled();
          else setTimeout(check, options.quietMs);
        };
        check();
      });
    },
    async stop() {
      stopped = true;
      if (quietTimer !== null) clearTimeout(quietTimer);
      if (reconcileTimer !== null) clearTimeout(reconcileTimer);
      // Watches of folders deleted meanwhile are gone already; the kernel says EINVAL for them.
      await subscription.unsubscribe().catch((error: unknown) => log.debug({ err: error }, 'watch: unsubscribed'));
      await walking;
    },
  };
}
