// Every regular file under a corpus directory, recursively, as an async iterable: what stage 1
// walks (stages/source.ts), what pull-sync compares with the bucket, and what a file:// bucket
// lists. Directories are read through fs.opendir in small buffered batches and yielded
// one file at a time, so the consumer's pace limits the walk (it never lists the corpus).
//
// - Names are read as bytes. A name that is not valid UTF-8 still gets a stable relative
//   path (each invalid byte spelled %XX) and is opened by its raw bytes.
// - Symbolic links are followed only when their target stays inside the corpus; a linked
//   directory already visited (a cycle) is not entered twice.
// - Dot-files and dot-directories are skipped: they are tooling (.git, editor swap files)
//   and the temp files of atomic writes, never documents.
// - An entry that cannot be read is skipped with a logged reason; the walk goes on.
// - A directory that cannot be listed, whole or in part (EACCES, EIO, gone mid-walk, a stale
//   mount), is reported apart from skipped entries: what it holds is unknown, not gone, so the
//   consumer must not read its absence as removals (engine/walk/unlisted.ts).
// - Directories the caller excludes (the service's own data inside the corpus) are not entered,
//   by whatever path reaches them.

import type { Dirent } from 'node:fs';
import { opendir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.ts';

export interface FileItem {
  /** Corpus-relative path with '/' separators: the item's identity. */
  relPath: string;
  /** The path to open, as raw bytes (exact even for non-UTF-8 names). */
  absPath: Buffer;
  size: number;
  mtimeNs: bigint;
  ino: bigint;
}

export interface SkippedEntry {
  relPath: string;
  /** What kind of entry was passed over: the walk's summary names links that leave the corpus. */
  kind: 'unreadable' | 'link_outside_corpus' | 'broken_link' | 'not_a_file';
  reason: string;
}

/** A directory the walk could not list, or not to the end. relPath '' is the corpus root. */
export interface UnlistedDirectory {
  relPath: string;
  reason: string;
}

export interface WalkFilesOptions {
  /** Hears about entries that were passed over (unreadable, links leaving the corpus, special files). */
  onSkip?: (entry: SkippedEntry) => void;
  /** Hears about directories that could not be listed; the files yielded from one before it failed stand. */
  onUnlisted?: (directory: UnlistedDirectory) => void;
  /** Directories never walked (absolute paths), however the corpus reaches them; ones that do not exist are ignored. */
  exclude?: readonly string[];
}

const SEPARATOR = Buffer.from(path.sep);

/** A name segment as text: itself when valid UTF-8, else with each invalid byte spelled %XX. */
export function nameToText(name: Buffer): string {
  const text = name.toString('utf8');
  if (Buffer.from(text, 'utf8').equals(name)) return text;
  let out = '';
  let i = 0;
  while (i < name.length) {
    const width = utf8SequenceLength(name, i);
    if (width === 0) {
      out += `%${name[i]!.toString(16).toUpperCase().padStart(2, '0')}`;
      i += 1;
    } else {
      out += name.subarray(i, i + width).toString('utf8');
      i += width;
    }
  }
  return out;
}

/** Length of the valid UTF-8 sequence starting at i, or 0 when the bytes there are not one. */
function utf8SequenceLength(bytes: Buffer, i: number): number {
  const b = bytes[i]!;
  const width = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (width <= 1) return width;
  if (i + width > bytes.length) return 0;
  const candidate = bytes.subarray(i, i + width);
  return Buffer.from(candidate.toString('utf8'), 'utf8').equals(candidate) ? width : 0;
}

function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** How many directory entries are examined at once: their stat calls run concurrently. */
const ENTRY_BATCH = 64;

type Examined =
  | { kind: 'file'; rel: string; abs: Buffer; size: number; mtimeNs: bigint; ino: bigint }
  | { kind: 'dir'; rel: string; abs: Buffer; realTarget: string | null }
  | { kind: 'skip'; entry: SkippedEntry };

const errorCode = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? (error as Error).message;

/** Yields every regular file under root; `options` says what to leave out and who hears about gaps. */
export async function* walkFiles(root: string, log: Logger, options: WalkFilesOptions = {}): AsyncGenerator<FileItem> {
  const realRoot = await realpath(root);
  const visited = new Set<string>([realRoot]);
  const excluded = await ExcludedDirectories.inside(realRoot, options.exclude ?? []);
  // Depth-first with an explicit stack of directories still to read; each holds its raw path
  // and its corpus-relative text path.
  const pending: { abs: Buffer; rel: string }[] = [{ abs: Buffer.from(root), rel: '' }];
  const skip = (entry: SkippedEntry) => {
    log.warn({ path: entry.relPath, reason: entry.reason }, 'source entry skipped');
    options.onSkip?.(entry);
  };
  const unlisted = (rel: string, error: unknown) => {
    const reason = `cannot read directory: ${errorCode(error)}`;
    log.warn({ path: rel || '.', reason }, 'directory could not be listed');
    options.onUnlisted?.({ relPath: rel, reason });
  };

  // Entries are examined a batch at a time: one stat after another would cost a thread-pool
  // round trip per file, which is most of an unchanged walk's time. They are still yielded in
  // directory order, and a directory is read no further ahead than one batch.
  async function* settle(batch: Promise<Examined>[]): AsyncGenerator<FileItem> {
    for (const examined of await Promise.all(batch)) {
      if (examined.kind === 'skip') skip(examined.entry);
      else if (examined.kind === 'file')
        yield {
          relPath: examined.rel,
          absPath: examined.abs,
          size: examined.size,
          mtimeNs: examined.mtimeNs,
          ino: examined.ino,
        };
      else if (examined.realTarget === null || !visited.has(examined.realTarget)) {
        // A linked directory already visited (a cycle) is not entered twice.
        if (examined.realTarget !== null) visited.add(examined.realTarget);
        pending.push({ abs: examined.abs, rel: examined.rel });
      }
    }
  }

  while (pending.length > 0) {
    const dir = pending.pop()!;
    if (dir.rel !== '' && (await excluded.holds(dir.abs))) {
      log.info({ path: dir.rel }, 'not walked: the service keeps its own data there');
      continue;
    }
    let listing: AsyncIterator<Dirent>;
    try {
      const handle = await opendir(dir.abs, { encoding: 'buffer', bufferSize: ENTRY_BATCH } as never);
      listing = handle[Symbol.asyncIterator]();
    } catch (error) {
      unlisted(dir.rel, error);
      continue;
    }
    let batch: Promise<Examined>[] = [];
    try {
      for (;;) {
        // Only the directory read is guarded: a failure there leaves the rest of the directory
        // unknown, and the entries read before it are still walked.
        let next: IteratorResult<Dirent>;
        try {
          next = await listing.next();
        } catch (error) {
          unlisted(dir.rel, error);
          break;
        }
        if (next.done === true) break;
        const name = next.value.name as unknown as Buffer;
        if (name[0] === 0x2e /* '.' */) continue;
        batch.push(examine(next.value, name, dir, realRoot));
        if (batch.length === ENTRY_BATCH) {
          yield* settle(batch);
          batch = [];
        }
      }
    } finally {
      // Closes the directory when the consumer stops early; a no-op once the listing ended.
      await listing.return?.();
    }
    yield* settle(batch);
  }
}

/**
 * The excluded directories that lie inside the corpus, known by device and inode so that any
 * spelling of their path (a link, a bind mount) matches. Each directory of the walk costs one
 * stat more, but only when there is one.
 */
class ExcludedDirectories {
  readonly #ids: ReadonlySet<string>;

  private constructor(ids: ReadonlySet<string>) {
    this.#ids = ids;
  }

  static async inside(realRoot: string, dirs: readonly string[]): Promise<ExcludedDirectories> {
    const ids = new Set<string>();
    for (const dir of dirs) {
      const real = await realpath(dir).catch(() => null);
      // The corpus root itself is walked even when it is one of them: the caller asked for it.
      if (real === null || real === realRoot || !isInside(realRoot, real)) continue;
      const id = await directoryId(real);
      if (id !== null) ids.add(id);
    }
    return new ExcludedDirectories(ids);
  }

  async holds(dir: Buffer): Promise<boolean> {
    if (this.#ids.size === 0) return false;
    const id = await directoryId(dir);
    return id !== null && this.#ids.has(id);
  }
}

async function directoryId(dir: string | Buffer): Promise<string | null> {
  return stat(dir, { bigint: true }).then(
    (s) => (s.isDirectory() ? `${s.dev}:${s.ino}` : null),
    () => null,
  );
}

async function examine(
  entry: Dirent,
  name: Buffer,
  dir: { abs: Buffer; rel: string },
  realRoot: string,
): Promise<Examined> {
  const abs = Buffer.concat([dir.abs, SEPARATOR, name]);
  const rel = dir.rel === '' ? nameToText(name) : `${dir.rel}/${nameToText(name)}`;
  let realTarget: string | null = null;
  if (entry.isSymbolicLink()) {
    realTarget = await realpath(abs).then(
      (p) => p.toString(),
      () => null,
    );
    if (realTarget === null) return skipped(rel, 'broken_link', 'broken symbolic link');
    if (!isInside(realRoot, realTarget))
      return skipped(rel, 'link_outside_corpus', 'symbolic link leads outside the corpus');
  } else if (entry.isDirectory()) {
    return { kind: 'dir', rel, abs, realTarget: null };
  } else if (!entry.isFile()) {
    return skipped(rel, 'not_a_file', 'not a regular file');
  }
  // A regular file, or a link inside the corpus: stat follows the link to its target.
  try {
    const st = await stat(abs, { bigint: true });
    if (st.isDirectory() && realTarget !== null) return { kind: 'dir', rel, abs, realTarget };
    if (!st.isFile()) return skipped(rel, 'not_a_file', 'not a regular file');
    return { kind: 'file', rel, abs, size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino };
  } catch (error) {
    return skipped(rel, 'unreadable', `cannot stat: ${errorCode(error)}`);
  }
}

const skipped = (relPath: string, kind: SkippedEntry['kind'], reason: string): Examined => ({
  kind: 'skip',
  entry: { relPath, kind, reason },
});
