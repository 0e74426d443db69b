// Admission: is this item unchanged since its memo was written? An unchanged item costs
// nothing further: no read when size, mtime and inode all match the memo (full_reprocess is
// the escape hatch for an edit that preserved all three), and no model call or row write
// when the bytes hash to the memo's sha256.
//
// The stat check is synchronous on purpose: it is the whole cost of an unchanged item, so the
// walk runs it inline, before the item takes an in-flight slot (engine/walk.ts).

import { readFile } from 'node:fs/promises';
import { sha256Hex } from '../lib/hash.ts';
import type { FileItem } from '../lib/corpus/files.ts';
import { fileIdentity } from '../lib/state/keys.ts';
import type { ItemMemo, ItemStamp, StateStore } from '../lib/state/store.ts';
import { countEvent } from '../lib/run-context.ts';

/**
 * A file's bytes, handed over once: whoever holds the admission does not keep a large file's
 * bytes alive beside its converted text for the rest of its life.
 */
export class FileBytes {
  #bytes: Buffer | null;
  readonly length: number;

  constructor(bytes: Buffer) {
    this.#bytes = bytes;
    this.length = bytes.length;
  }

  take(): Buffer {
    const bytes = this.#bytes;
    if (bytes === null) throw new Error('the file bytes were already taken');
    this.#bytes = null;
    return bytes;
  }
}

/** A file whose bytes differ from its memo's (or that has none): what its life goes on with. */
export interface ChangedFile {
  kind: 'changed';
  bytes: FileBytes;
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

/** The item's memo stamp; an unreadable memo is dropped (and counted as healed), so the item re-runs. */
export function recallFile(item: FileItem, store: StateStore): ItemStamp | undefined {
  const { stamp, healed } = store.getItemStamp(fileIdentity(item.relPath));
  if (healed) countEvent('memo_heal');
  return stamp;
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

/** Reads and hashes an item the stat check could not clear. */
export async function admitFile(item: FileItem, store: StateStore, fullReprocess: boolean): Promise<Admission> {
  const key = fileIdentity(item.relPath);
  const { memo, healed } = store.getItem(key);
  if (healed) countEvent('memo_heal');
  const readAtMs = Date.now();
  const bytes = await readFile(item.absPath);
  const sha256 = sha256Hex(bytes);
  const mtimeNs = stampMtime(item.mtimeNs, readAtMs);
  if (memo !== undefined && !fullReprocess && memo.sha256 === sha256) {
    // Touched but not changed: remember the new stat so the next walk takes the fast path.
    const refreshed = { ...memo, size: item.size, mtimeNs, ino: String(item.ino) };
    await store.putItem(key, refreshed);
    return { kind: 'unchanged', memo: refreshed };
  }
  return { kind: 'changed', bytes: new FileBytes(bytes), sha256, previous: memo, mtimeNs };
}
