// Admission: is this item unchanged since its memo was written? An unchanged item costs
// nothing further: no read when size, mtime and inode all match the memo (full_reprocess is
// the escape hatch for an edit that preserved all three), and no model call or row write
// when the bytes hash to the memo's sha256. A markdown or plain-text file is read a piece at a
// time and never held whole when large (docs/DECISIONS.md "A text file read as a stream").
//
// The stat check is synchronous on purpose: it is the whole cost of an unchanged item, so the
// walk runs it inline, before the item takes an in-flight slot (engine/walk/walk.ts).

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { IngestError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { EncodingProbe, type DecodingPlan } from '../../stages/convert/text-decode.ts';
import type { FileItem } from '../../lib/corpus/files.ts';
import type { SourceItem, UrlItem } from '../../stages/source.ts';
import { fileIdentity } from '../../lib/state/keys.ts';
import type { ItemMemo, ItemStamp, StateStore } from '../../lib/state/store.ts';
import { countEvent } from '../../lib/run-context.ts';

/** Bytes a text file is read in, hashed, probed and decoded a piece at a time. */
const PIECE_BYTES = 256 * 1024;
/**
 * A text file up to this size keeps the pieces it was hashed from for its conversion (one read);
 * a larger one is read again as it is converted, so that its bytes are never all held at once.
 */
const HELD_TEXT_BYTES = 4 * 1024 * 1024;

/** The file's bytes no longer hash to what admission read: it changed while it was being converted. */
export class FileChangedError extends IngestError {
  constructor(relPath: string) {
    super('changed_while_read', `${relPath} changed while it was read; it is read again on the next walk`);
  }
}

/**
 * A changed file's bytes as its conversion takes them, once: whole (a PDF, DOCX, XLSX or HTML
 * file, read whole by admission) or a piece at a time (a text file, with how to decode it). A
 * large text file's pieces are not held: they are read again, and must hash to what admission
 * read, or the item fails with FileChangedError (its memo, which records that hash, unwritten).
 */
export class FileContent {
  readonly #item: FileItem;
  readonly #sha256: string;
  /** The bytes, while held and not yet taken; null for a large text file (read again). */
  #held: Buffer[] | null;
  #taken = false;
  readonly length: number;
  /** How a text file's bytes decode (probed as admission read them); null for other types. */
  readonly plan: DecodingPlan | null;

  constructor(
    item: FileItem,
    sha256: string,
    read: { held: Buffer[] | null; length: number; plan: DecodingPlan | null },
  ) {
    this.#item = item;
    this.#sha256 = sha256;
    this.#held = read.held;
    this.length = read.length;
    this.plan = read.plan;
  }

  /** The whole bytes (only ever held whole for a file that is not text). */
  whole(): Buffer {
    const held = this.#take();
    if (held === null || held.length !== 1) throw new Error('the file was read in pieces');
    return held[0]!;
  }

  /** The bytes in order, each piece released once taken. */
  async *pieces(): AsyncGenerator<Buffer, void, undefined> {
    const held = this.#take();
    if (held !== null) {
      for (let piece = held.shift(); piece !== undefined; piece = held.shift()) yield piece;
      return;
    }
    const hash = createHash('sha256');
    for await (const piece of readPieces(this.#item.absPath)) {
      hash.update(piece);
      yield piece;
    }
    if (hash.digest('hex') !== this.#sha256) throw new FileChangedError(this.#item.relPath);
  }

  #take(): Buffer[] | null {
    if (this.#taken) throw new Error('the file bytes were already taken');
    this.#taken = true;
    const held = this.#held;
    this.#held = null;
    return held;
  }
}

function readPieces(absPath: Buffer): AsyncIterable<Buffer> {
  return createReadStream(absPath, { highWaterMark: PIECE_BYTES });
}

/** A file whose bytes differ from its memo's (or that has none): what its life goes on with. */
export interface ChangedFile {
  kind: 'changed';
  content: FileContent;
  sha256: string;
  previous: ItemMemo | undefined;
  /** The mtime its memo may vouch for (see stampMtime). */
  mtimeNs: string;
}

/**
 * A modification time younger than this when the bytes were read cannot vouch for them: the
 * file may be written again within the same timestamp tick (coarse kernel clocks, 2 s on FAT)
 * keeping its size, and the stat check would then never look at it again. Such a stamp is
 * recorded as never matching, so the next walk hashes the file once more (git's "racily clean"
 * entries). Watch mode walks every save within a second of it, so this is its common case.
 */
const RACY_WINDOW_NS = 2_000_000_000n;

/** The mtime to record for bytes read at `readAtMs`: itself, or a value no stat ever matches. */
export function stampMtime(mtimeNs: bigint, readAtMs: number): string {
  return BigInt(readAtMs) * 1_000_000n - mtimeNs > RACY_WINDOW_NS ? String(mtimeNs) : 'racy';
}

export type Admission = { kind: 'unchanged'; memo: ItemMemo } | ChangedFile;

/** A source item, a file with its memo stamp (undefined: none, or an unreadable one, dropped). */
export type StampedItem =
  { kind: 'file'; file: FileItem; stamp: ItemStamp | undefined } | { kind: 'url'; url: UrlItem };

/**
 * The source items in their order, each file with its memo stamp, read as many at a time as the
 * store reads at once. An unreadable memo is dropped (and counted as healed), so the item re-runs.
 */
export async function* withStamps(items: AsyncIterable<SourceItem>, store: StateStore): AsyncGenerator<StampedItem> {
  let held: SourceItem[] = [];
  for await (const item of items) {
    held.push(item);
    if (held.length < store.stampsAtOnce) continue;
    yield* stamped(held, store);
    held = [];
  }
  yield* stamped(held, store);
}

/** `items` with their files' stamps, read in one call. */
async function* stamped(items: readonly SourceItem[], store: StateStore): AsyncGenerator<StampedItem> {
  const files = items.flatMap((item) => (item.kind === 'file' ? [item.file] : []));
  const stamps = await store.getItemStamps(files.map((file) => fileIdentity(file.relPath)));
  let next = 0;
  for (const item of items) {
    if (item.kind === 'url') {
      yield item;
      continue;
    }
    const { stamp, healed } = stamps[next++]!;
    if (healed) countEvent('memo_heal');
    yield { kind: 'file', file: item.file, stamp };
  }
}

/** True when size, mtime and inode all match the memo: the item is unchanged, unread. */
export function unchangedByStat(
  stamp: ItemStamp | undefined,
  item: FileItem,
  fullReprocess: boolean,
): stamp is ItemStamp {
  return (
    stamp !== undefined &&
    !fullReprocess &&
    stamp.size === item.size &&
    stamp.mtimeNs === String(item.mtimeNs) &&
    stamp.ino === String(item.ino)
  );
}

/**
 * Reads and hashes an item the stat check could not clear. A text file (`textual`) is read a
 * piece at a time, its encoding probed as it goes; any other is read whole, as its converter
 * needs it. `refreshStamp: false` leaves the memo as it is (a reader beside the walk, which owns
 * the memo: engine/prefill/).
 */
export async function admitFile(
  item: FileItem,
  store: StateStore,
  { fullReprocess, textual, refreshStamp = true }: { fullReprocess: boolean; textual: boolean; refreshStamp?: boolean },
): Promise<Admission> {
  const key = fileIdentity(item.relPath);
  const { memo, healed } = await store.getItem(key);
  if (healed) countEvent('memo_heal');
  const readAtMs = Date.now();
  const read = textual ? await readText(item) : await readWhole(item);
  const mtimeNs = stampMtime(item.mtimeNs, readAtMs);
  if (memo !== undefined && !fullReprocess && memo.sha256 === read.sha256) {
    // Touched but not changed: remember the new stat so the next walk takes the fast path.
    const refreshed = { ...memo, size: item.size, mtimeNs, ino: String(item.ino) };
    if (refreshStamp) await store.putItem(key, refreshed);
    return { kind: 'unchanged', memo: refreshed };
  }
  const content = new FileContent(item, read.sha256, read);
  return { kind: 'changed', content, sha256: read.sha256, previous: memo, mtimeNs };
}

interface FileRead {
  sha256: string;
  held: Buffer[] | null;
  length: number;
  plan: DecodingPlan | null;
}

async function readWhole(item: FileItem): Promise<FileRead> {
  const bytes = await readFile(item.absPath);
  return { sha256: sha256Hex(bytes), held: [bytes], length: bytes.length, plan: null };
}

/** A text file hashed and probed a piece at a time, its pieces kept only while it is small. */
async function readText(item: FileItem): Promise<FileRead> {
  const hash = createHash('sha256');
  const probe = new EncodingProbe();
  let held: Buffer[] | null = [];
  let length = 0;
  for await (const piece of readPieces(item.absPath)) {
    hash.update(piece);
    probe.push(piece);
    length += piece.length;
    if (length > HELD_TEXT_BYTES) held = null;
    held?.push(piece);
  }
  return { sha256: hash.digest('hex'), held, length, plan: probe.finish() };
}
