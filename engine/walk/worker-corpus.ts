// Where a walk worker (engine/walk/walk-worker.ts) reads an item's bytes: from the corpus bucket
// when one is configured (INGEST_CORPUS_BUCKET, authoritative: file:// on a shared volume or
// s3://), each item copied to the worker's scratch directory for its life; else from the corpus
// directory as this machine mounts it. Never from the coordinator's disk.
//
// The item's memo stamp must describe the bytes the worker read, and the next walk's stat check
// runs on the coordinator's copy. So a bucket copy whose bytes hash to what the coordinator
// hashed when it queued the item takes the coordinator's stat (the next walk clears it by stat
// alone); one whose bytes differ (the object changed in between) keeps its own, fresh, stat,
// which no stat of the coordinator's copy matches: the item lands the bucket's newer bytes, and
// the next walk, which pulls them, reads the item again and finds it unchanged. Nothing is ever
// written from a mix of the two.

import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { CorpusBucket } from '../../lib/bucket/bucket.ts';
import type { FileItem } from '../../lib/corpus/files.ts';
import { corpusPathProblem } from '../../lib/corpus/path.ts';
import { sha256OfFile } from '../../lib/hash.ts';
import type { Logger } from '../../lib/log.ts';
import { StageError } from '../item/at-stage.ts';

/** A file as the coordinator saw it when it queued the item (its copy, pulled from the bucket). */
export interface SeenFile {
  sha256: string;
  size: number;
  mtimeNs: string;
  ino: string;
}

/** An item's bytes on this worker for the length of its life; `release` once the life is over. */
export interface HeldFile {
  file: FileItem;
  release(): Promise<void>;
}

export interface WorkerCorpus {
  /** Printable: where the bytes come from. */
  readonly location: string;
  hold(relPath: string, seen: SeenFile | null): Promise<HeldFile>;
  close(): void;
}

/** The corpus directory as this machine mounts it (a shared volume): read in place, its own stat. */
export class MountedCorpus implements WorkerCorpus {
  readonly #root: string;

  constructor(root: string) {
    this.#root = path.resolve(root);
  }

  get location(): string {
    return this.#root;
  }

  async hold(relPath: string): Promise<HeldFile> {
    const absPath = path.resolve(this.#root, relPath);
    if (path.relative(this.#root, absPath).startsWith('..') || path.isAbsolute(relPath))
      throw new StageError('admit', new Error(`the path ${relPath} is not inside the corpus ${this.#root}`));
    return { file: await statItem(relPath, absPath), release: async () => {} };
  }

  close(): void {}
}

/** The corpus bucket: each item downloaded to the scratch directory, checked against what the coordinator hashed. */
export class BucketCorpus implements WorkerCorpus {
  readonly #bucket: CorpusBucket;
  readonly #scratch: string;
  readonly #log: Logger;

  private constructor(bucket: CorpusBucket, scratch: string, log: Logger) {
    this.#bucket = bucket;
    this.#scratch = scratch;
    this.#log = log;
  }

  /**
   * Copies go to a directory of this process's own under `scratchRoot` (workers may share a data
   * directory), named after its host and pid; this host's directories of processes no longer
   * running (a killed worker's) are removed first: their copies belong to no item any more.
   */
  static async open(bucket: CorpusBucket, scratchRoot: string, log: Logger): Promise<BucketCorpus> {
    const host = `${hostname()}-`;
    await mkdir(scratchRoot, { recursive: true });
    for (const name of await readdir(scratchRoot)) {
      if (name.startsWith(host) && !isRunning(Number.parseInt(name.slice(host.length), 10)))
        await rm(path.join(scratchRoot, name), { recursive: true, force: true });
    }
    return new BucketCorpus(bucket, await mkdtemp(path.join(scratchRoot, `${host}${process.pid}-`)), log);
  }

  get location(): string {
    return this.#bucket.location;
  }

  async hold(relPath: string, seen: SeenFile | null): Promise<HeldFile> {
    // A job's path is a key of the bucket, refused as pull-sync refuses one that could leave the corpus.
    const problem = corpusPathProblem(relPath);
    if (problem !== null) throw new StageError('admit', new Error(`the bucket key ${relPath} is refused: ${problem}`));
    const copy = path.join(this.#scratch, randomUUID());
    const release = () => rm(copy, { force: true });
    try {
      await this.#bucket.download(relPath, copy).catch((error: unknown) => {
        throw new StageError('admit', error);
      });
      const own = await statItem(relPath, copy);
      if (seen === null) return { file: own, release };
      if ((await sha256OfFile(copy)) === seen.sha256)
        return { file: { ...own, mtimeNs: BigInt(seen.mtimeNs), ino: BigInt(seen.ino) }, release };
      this.#log.info(
        { path: relPath },
        'the bucket holds newer bytes than the walk queued: they are the ones ingested',
      );
      return { file: own, release };
    } catch (error) {
      await release();
      throw error;
    }
  }

  close(): void {
    this.#bucket.close();
    rmSync(this.#scratch, { recursive: true, force: true });
  }
}

/** Whether a process of this pid runs on this machine (one we may not signal runs too). */
function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function statItem(relPath: string, absPath: string): Promise<FileItem> {
  const st = await stat(absPath, { bigint: true }).catch((error: unknown) => {
    throw new StageError('admit', error);
  });
  return { relPath, absPath: Buffer.from(absPath), size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino };
}

/** The coordinator's side: what it tells the worker of a file it queues (hashed only when a bucket is the source). */
export async function seenFile(file: FileItem): Promise<SeenFile> {
  return {
    sha256: await sha256OfFile(file.absPath),
    size: file.size,
    mtimeNs: String(file.mtimeNs),
    ino: String(file.ino),
  };
}
