// The walk, top to bottom as the data flows (SPEC.md 1, DESIGN.md 5):
//
//   run record (in_progress) -> idle check -> bind the state store to the database ->
//   for each source item (files, then passed feed URLs):
//       memo check by stat, inline (an unchanged item ends here and takes no slot); then, at
//       most `walk.inFlight` at a time: admit (bytes hash) -> convert -> identity -> chunk ->
//       sink (durable) -> memo commit
//   -> settle barrier (every item done, the sink drained) -> flow-scope passes, each contained
//   -> URL backlink reconciliation -> stale-row cleanup -> run record (terminal status)
//
// One item's failure is tallied and logged and never fails the walk. An item's memo entry is
// committed only after its rows are durable, so a walk killed at any instant loses no row and,
// run again, redoes exactly the items whose memo was not committed.

import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import PQueue from 'p-queue';
import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { Sink } from '../lib/db/sink.ts';
import type { Logger } from '../lib/log.ts';
import { admitFile, fileIdentity, recallFile, retiredIdentity, unchangedByStat } from './admit.ts';
import type { AliasSnapshot } from '../lib/aliases.ts';
import { untilNoneWaiting } from './backpressure.ts';
import { bindStoreToDatabase } from './binding.ts';
import { DigestSet } from './digest-set.ts';
import { DocumentIdentity } from './identity.ts';
import { atStage, ingestFile, StageError } from './file.ts';
import { ingestUrl, urlIdentity } from './url.ts';
import { publishRunContext, type RunContext, type RunCounters } from '../lib/run-context.ts';
import type { Models } from './models.ts';
import type { ItemMemo, StateStore } from '../lib/state/store.ts';
import type { RunRecorder } from '../lib/runs/record.ts';
import { ConversionError, mediaTypeFor, type Converter, type MediaType } from '../stages/convert/index.ts';
import { reconcileUrlBacklinks } from '../stages/backlink.ts';
import { removeVanishedDocuments, type CleanupInput } from '../stages/cleanup.ts';
import { walkFiles, type FileItem } from '../stages/source.ts';
import { passedUrls, type UrlItem } from '../stages/source-urls.ts';
import { upsertItemRows } from '../stages/upsert.ts';
import { withFailureInjection, type FailStage5Mode } from '../lib/failure-directive.ts';

/** A flow-scope pass run after the settle barrier (stage 5, Q&A dedup, backlink, ...). */
export interface FlowPass {
  readonly name: string;
  run(context: { db: Database; log: Logger; run: RunContext }): Promise<void>;
}

export interface WalkEngine {
  readonly config: Config;
  readonly db: Database;
  readonly store: StateStore;
  readonly log: Logger;
  readonly converter: Converter;
  readonly models: Models;
  readonly runs: RunRecorder;
  readonly aliases: AliasSnapshot;
  readonly passes?: readonly FlowPass[];
}

export interface WalkOptions {
  /** Overrides ENGINE_SOURCE_PATH. */
  sourcePath?: string | null;
  fullReprocess?: boolean;
  onProgress?: (progress: WalkProgress) => void;
  /** A consumed failStage5 directive: the flow-scope passes run with those credentials broken. */
  failStage5?: FailStage5Mode | null;
}

export interface WalkProgress {
  seen: number;
  done: number;
}

export interface ItemFailure {
  path: string;
  stage: string;
  code: string;
  message: string;
}

export interface WalkSummary {
  opId: string;
  status: 'completed' | 'failed';
  idle: boolean;
  items: { seen: number; changed: number; unchanged: number; failed: number; dropped: number; skipped: number; removed: number };
  /** The first MAX_REPORTED_FAILURES failures in detail; items.failed has the count. */
  failures: ItemFailure[];
  rows: Record<string, number>;
  rowsDeleted: number;
  counters: RunCounters;
  passes: { name: string; ok: boolean; error?: string }[];
  error?: string;
  durationMs: number;
  /** Peak resident memory of this process so far (converter children are capped separately). */
  peakRssMb: number;
}

const MAX_REPORTED_FAILURES = 1000;

export class WalkInProgressError extends Error {
  constructor() {
    super('a walk is already running in this process');
    this.name = 'WalkInProgressError';
  }
}

let walking = false;

export async function walk(engine: WalkEngine, options: WalkOptions = {}): Promise<WalkSummary> {
  if (walking) throw new WalkInProgressError();
  walking = true;
  try {
    return await runWalk(engine, options);
  } finally {
    walking = false;
  }
}

async function runWalk(engine: WalkEngine, options: WalkOptions): Promise<WalkSummary> {
  const { config, log } = engine;
  const started = Date.now();
  const startedAt = new Date(started).toISOString();
  const run = publishRunContext(randomUUID(), options.fullReprocess === true);
  const summary: WalkSummary = {
    opId: run.opId, status: 'completed', idle: false,
    items: { seen: 0, changed: 0, unchanged: 0, failed: 0, dropped: 0, skipped: 0, removed: 0 },
    failures: [], rows: {}, rowsDeleted: 0, counters: run.counters, passes: [], durationMs: 0, peakRssMb: 0,
  };
  const walkLog = log.child({ opId: run.opId });
  if (config.imageSha === null) walkLog.warn('IMAGE_SHA is not set: this run will carry no result.extractor_version');
  const record = (status: 'in_progress' | 'completed' | 'failed', finishedAt: string | null) => ({
    opId: run.opId, status, startedAt, finishedAt,
    result: {
      ...(config.imageSha === null ? {} : { extractor_version: config.imageSha }),
      counts: { ...summary.items, ...prefixed('rows_', summary.rows), rows_deleted: summary.rowsDeleted },
      counters: { ...run.counters },
      ...(summary.error === undefined ? {} : { error: summary.error }),
    },
  });
  await engine.runs.start(record('in_progress', null));
  walkLog.info({ fullReprocess: run.fullReprocess }, 'walk started');

  const sourcePath = options.sourcePath === undefined ? config.sourcePath : options.sourcePath;
  if (sourcePath === null || !(await isDirectory(sourcePath))) {
    summary.idle = true;
    walkLog.info({ sourcePath }, 'idle: no corpus directory, nothing to walk');
  } else {
    try {
      await walkCorpus(engine, sourcePath, run, summary, walkLog, options);
    } catch (error) {
      summary.status = 'failed';
      summary.error = (error as Error).message;
      walkLog.error({ err: error }, 'walk failed');
    }
  }
  summary.durationMs = Date.now() - started;
  summary.peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  await engine.runs.finish(record(summary.status, new Date().toISOString()));
  walkLog.info({ status: summary.status, items: summary.items, rows: summary.rows, durationMs: summary.durationMs }, 'walk finished');
  return summary;
}

async function walkCorpus(
  engine: WalkEngine,
  sourcePath: string,
  run: RunContext,
  summary: WalkSummary,
  log: Logger,
  options: WalkOptions,
): Promise<void> {
  const { config, db, store } = engine;
  const { onProgress } = options;
  if (await bindStoreToDatabase(store, db)) {
    log.warn('the state store described another database (or this one was wiped): every item counts as changed');
  }
  await engine.aliases.refresh(db);
  const sink = new Sink(db, config.sink);
  const identity = new DocumentIdentity(db);
  const seen = new DigestSet();
  const liveDocumentIds = new DigestSet();
  const landedReferenceIds = new Set<string>();
  const queue = new PQueue({ concurrency: config.walk.inFlight });
  let done = 0;

  const fail = (path: string, error: unknown) => {
    const stageError = error instanceof StageError ? error : new StageError('walk', error);
    summary.items.failed += 1;
    run.counters.item_failure += 1;
    if (summary.failures.length < MAX_REPORTED_FAILURES) {
      summary.failures.push({ path, stage: stageError.stage, code: stageError.code, message: stageError.message });
    }
    log.warn({ path, stage: stageError.stage, code: stageError.code, err: stageError.message }, 'item failed');
  };

  const ingestOne = async (item: FileItem, mediaType: MediaType): Promise<void> => {
    const key = fileIdentity(item.relPath);
    let previous: ItemMemo | undefined;
    try {
      if (item.size > config.convert.maxDocumentBytes) {
        // Refused before reading: a huge file must not be pulled into memory to be rejected.
        throw new StageError('admit', new ConversionError('too_large', `the file is ${item.size} bytes, over the limit of ${config.convert.maxDocumentBytes}`));
      }
      const admission = await atStage('admit', () => admitFile(item, store, run.fullReprocess));
      if (admission.kind === 'unchanged') {
        liveDocumentIds.add(admission.memo.sourceDocumentId);
        summary.items.unchanged += 1;
        return;
      }
      previous = admission.previous;
      const ingested = await ingestFile(item, mediaType, admission.bytes, admission.sha256, {
        converter: engine.converter, identity, models: engine.models, store, db, aliases: engine.aliases,
      });
      const sameDocument = previous?.sourceDocumentId === ingested.sourceDocumentId;
      await atStage('upsert', () => upsertItemRows(sink, db, ingested.rows, ingested.keys, sameDocument ? previous?.rows : undefined));
      identity.settled(admission.sha256);
      liveDocumentIds.add(ingested.sourceDocumentId);
      if (previous !== undefined && !sameDocument) {
        // The item moved to another document. Its old memo is kept under a key no walk will
        // enumerate, so the cleanup pass (this walk's, or the next one's after a crash)
        // retires the old document's rows unless another item still resolves to it.
        await atStage('memo', () => store.putItem(retiredIdentity(key, run.opId), previous!));
      }
      await atStage('memo', () =>
        store.putItem(key, {
          sha256: admission.sha256, size: item.size, mtimeNs: String(item.mtimeNs), ino: String(item.ino),
          sourceDocumentId: ingested.sourceDocumentId, mediaType, opId: run.opId, rows: ingested.keys,
        }),
      );
      summary.items.changed += 1;
    } catch (error) {
      // The item's earlier rows stay as they were: its document is still live.
      if (previous !== undefined) liveDocumentIds.add(previous.sourceDocumentId);
      fail(item.relPath, error);
    }
  };

  const ingestOneUrl = async (item: UrlItem): Promise<void> => {
    try {
      const ingested = await ingestUrl(item, { db, sink, store, models: engine.models, aliases: engine.aliases, fetch: config.fetch, log });
      landedReferenceIds.add(ingested.referenceItemId);
      summary.items[ingested.kind] += 1;
    } catch (error) {
      fail(item.url, error);
    }
  };

  const finished = () => {
    done += 1;
    onProgress?.({ seen: summary.items.seen, done });
  };
  const enqueue = async (work: () => Promise<void>): Promise<void> => {
    // Backpressure: the walk reads no further while every in-flight slot is taken.
    await untilNoneWaiting(queue);
    void queue.add(async () => {
      await work();
      finished();
    });
  };

  /** Settles an item that needs no slot (unchanged by stat, or of no known type), or queues it. */
  const admitOne = async (item: FileItem): Promise<void> => {
    summary.items.seen += 1;
    const mediaType = mediaTypeFor(item.relPath);
    if (mediaType === null) {
      summary.items.dropped += 1;
      log.info({ path: item.relPath }, 'item dropped: unrecognised file type');
      finished();
      return;
    }
    const stamp = recallFile(item, store);
    if (unchangedByStat(stamp, item, run.fullReprocess)) {
      // The fast path of an unchanged walk: no read, no slot, nothing else.
      liveDocumentIds.add(stamp.sourceDocumentId);
      summary.items.unchanged += 1;
      finished();
      return;
    }
    await enqueue(() => ingestOne(item, mediaType));
  };

  const onSkip = ({ relPath }: { relPath: string }) => {
    // An unreadable entry is still part of the corpus: its earlier rows must not be cleaned up.
    seen.add(fileIdentity(relPath));
    summary.items.skipped += 1;
  };
  try {
    for await (const item of walkFiles(sourcePath, log, onSkip)) {
      seen.add(fileIdentity(item.relPath));
      await admitOne(item);
    }
    for await (const item of passedUrls(db)) {
      seen.add(urlIdentity(item.url));
      summary.items.seen += 1;
      await enqueue(() => ingestOneUrl(item));
    }
  } finally {
    // Settle barrier: every item has finished and every row it wrote is durable (also when
    // the enumeration itself failed, so no write is left in flight).
    await queue.onIdle();
    await sink.close();
    for (const [table, n] of sink.rowsWritten) summary.rows[table] = n;
  }

  await withFailureInjection(options.failStage5 ?? null, () => runPasses(engine, run, summary, log, { seen, liveDocumentIds, landedReferenceIds }));
}

async function runPasses(
  engine: WalkEngine,
  run: RunContext,
  summary: WalkSummary,
  log: Logger,
  live: CleanupInput & { landedReferenceIds: Set<string> },
): Promise<void> {
  const { db, store } = engine;
  const backlink: FlowPass = {
    name: 'url_backlink',
    async run() {
      await reconcileUrlBacklinks(db, live.landedReferenceIds, log);
    },
  };
  const cleanup: FlowPass = {
    name: 'cleanup',
    async run() {
      const result = await removeVanishedDocuments(db, store, live);
      summary.items.removed = result.itemsRemoved;
      summary.rowsDeleted += result.rowsDeleted;
    },
  };
  for (const pass of [...(engine.passes ?? []), backlink, cleanup]) {
    try {
      await pass.run({ db, log, run });
      summary.passes.push({ name: pass.name, ok: true });
    } catch (error) {
      summary.passes.push({ name: pass.name, ok: false, error: (error as Error).message });
      log.error({ pass: pass.name, err: error }, 'flow-scope pass failed; the walk goes on');
    }
  }
}

async function isDirectory(dir: string): Promise<boolean> {
  return stat(dir).then((s) => s.isDirectory(), () => false);
}

function prefixed(prefix: string, counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [`${prefix}${k}`, v]));
}
