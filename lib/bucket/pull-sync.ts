// Pull-sync (docs/behaviour/routes.md#post-walk): before a walk's pass, inside the writer fence,
// the corpus directory is made a copy of the bucket: new and changed objects are downloaded,
// DOWNLOADS_AT_ONCE at a time (each to a hidden temp file, then renamed into place, so a walk
// never sees half a file), and files the bucket no longer has are deleted. Keys that could leave
// the corpus are refused one by one.

import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import PQueue from 'p-queue';
import type { Config } from '../config.ts';
import { corpusPathProblem } from '../corpus/path.ts';
import type { Logger } from '../log.ts';
import { walkFiles } from '../corpus/files.ts';
import { ownDataDirectories } from '../corpus/own-data.ts';
import { BucketError, type CorpusBucket } from './bucket.ts';
import { openBucket } from './index.ts';
import { SyncManifest } from './manifest.ts';

export interface SyncReport {
  downloaded: number;
  unchanged: number;
  removed: number;
  refused: number;
}

/** Objects downloaded at once: a first pull of a large bucket is bound by each download's latency, not bandwidth. */
export const DOWNLOADS_AT_ONCE = 8;

export async function pullSync(
  bucket: CorpusBucket,
  corpus: string,
  stateDir: string,
  log: Logger,
  notCorpus: {
    /** Keys under these are not corpus: the producer's bundle, the bid-worker's output (worker/output.ts). */
    prefixes: readonly string[];
    /** The service's own data directories, should one lie inside the corpus: never deleted in. */
    directories: readonly string[];
  },
): Promise<SyncReport> {
  const report: SyncReport = { downloaded: 0, unchanged: 0, removed: 0, refused: 0 };
  await mkdir(corpus, { recursive: true });
  const manifest = await SyncManifest.load(stateDir);
  const listed = new Set<string>();
  const downloads = new PQueue({ concurrency: DOWNLOADS_AT_ONCE });
  let failed: { error: unknown } | null = null;
  try {
    for await (const object of bucket.list()) {
      if (failed !== null) break;
      if (notCorpus.prefixes.some((prefix) => object.key.startsWith(prefix))) continue;
      const problem = corpusPathProblem(object.key);
      if (problem !== null) {
        report.refused++;
        log.warn({ key: object.key, reason: problem }, 'pull-sync refused a bucket key');
        continue;
      }
      listed.add(object.key);
      const target = path.join(corpus, ...object.key.split('/'));
      if (await manifest.current(object.key, object.version, target)) {
        report.unchanged++;
        continue;
      }
      // The listing waits while every download is busy: a bucket of millions holds no queue of them.
      await downloads.onSizeLessThan(DOWNLOADS_AT_ONCE);
      downloads
        .add(async () => {
          await fetchInto(bucket, object.key, target);
          await manifest.record(object.key, object.version, target);
          report.downloaded++;
        })
        .catch((error: unknown) => (failed ??= { error }));
    }
    await downloads.onIdle();
    if (failed !== null) throw (failed as { error: unknown }).error;
    await removeUnlisted(corpus, listed, notCorpus.directories, manifest, report, log);
  } finally {
    // A listing that failed leaves no download running past the manifest's save.
    await downloads.onIdle();
    await manifest.save();
  }
  log.info({ bucket: bucket.location, ...report }, 'pull-sync done');
  return report;
}

async function fetchInto(bucket: CorpusBucket, key: string, target: string): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  const temp = path.join(path.dirname(target), `.sync-${randomBytes(8).toString('hex')}.tmp`);
  try {
    await bucket.download(key, temp);
    await rename(temp, target);
  } finally {
    await rm(temp, { force: true });
  }
}

async function removeUnlisted(
  corpus: string,
  listed: Set<string>,
  ownData: readonly string[],
  manifest: SyncManifest,
  report: SyncReport,
  log: Logger,
): Promise<void> {
  const unlisted: string[] = [];
  let local = 0;
  for await (const file of walkFiles(corpus, log, { exclude: ownData })) {
    local++;
    if (!listed.has(file.relPath)) unlisted.push(file.relPath);
  }
  // An empty listing against a corpus with files is far likelier a wrong bucket or prefix than
  // a deliberate deletion of everything; refusing keeps the working copy (and its rows).
  if (listed.size === 0 && local > 0) {
    throw new BucketError(
      `the bucket lists no documents but the corpus holds ${local}; refusing to empty the corpus (check INGEST_CORPUS_BUCKET)`,
    );
  }
  for (const relPath of unlisted) {
    await unlink(path.join(corpus, ...relPath.split('/')));
    manifest.forget(relPath);
    report.removed++;
  }
}

/** Pull-sync of `corpus` from the configured bucket; null when no bucket is configured or the walk is idle. */
export async function syncCorpus(
  config: Pick<Config, 'corpusBucket' | 's3' | 'dataDir' | 'database' | 'stateStorePath' | 'bundle' | 'worker'>,
  corpus: string | null,
  log: Logger,
): Promise<SyncReport | null> {
  const bucket = openBucket(config, log);
  if (bucket === null) return null;
  try {
    return corpus === null
      ? null
      : await pullSync(bucket, corpus, config.stateStorePath, log, {
          prefixes: [config.bundle.bucketPrefix, config.worker.outputPrefix],
          directories: ownDataDirectories(config),
        });
  } finally {
    bucket.close();
  }
}
