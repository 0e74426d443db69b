// The commit step of an item, file or URL alike, in the order the crash-safety rule needs
// (docs/behaviour/stages.md#the-flow): its rows durable in the database -> the rows it emitted
// before and emits no longer deleted by key -> the producer's debt (once per walk,
// lib/state/producer-debt.ts) -> its memo in the state store. A large item's rows land in several
// writes, one batch after another (engine/item/file.ts), its memo after the last. A walk killed anywhere
// before the memo redoes the item next time (its inner extractor memos still save the model calls);
// the upserts are idempotent by key and the keys are derived, so the redo ends with exactly the
// rows of an unbroken walk. The debt goes before the memo because the memo is what lets the next
// walk pass the item over: no change is passed over unless a producer run is owed.
//
// Where the state store lives in the rows' database (the database store), the debt goes first and
// the rest is one transaction: the item's last rows, its stale rows deleted, the inner memo
// entries it holds (engine/item/item-memos.ts) and its memo commit together, or none of them does.

import type { Database } from '../../lib/db/database.ts';
import type { Sink, WithinRowsTransaction } from '../../lib/db/sink.ts';
import { recordEmbeddings } from '../../lib/db/tables.ts';
import { VectorSourceGoneError } from '../../lib/db/upsert-rows.ts';
import type { Models } from '../../lib/models.ts';
import type { WalkDebt } from '../../lib/state/producer-debt.ts';
import { retiredIdentity } from '../../lib/state/keys.ts';
import type { ItemMemo, StateStore } from '../../lib/state/store.ts';
import { embedVectorCopies } from '../../stages/embed.ts';
import { deleteStaleRows, type ItemRows } from '../../stages/upsert.ts';
import { atStage } from './at-stage.ts';
import type { ItemMemos } from './item-memos.ts';
import type { ItemSlot } from './slot.ts';

export interface CommitDeps {
  db: Database;
  sink: Sink;
  store: StateStore;
  models: Pick<Models, 'embedder' | 'queue'>;
  /** Owed to the producer before a change's memo: a walk killed after it still gets its run. */
  debt: WalkDebt;
}

export interface ItemCommit {
  /** The item's memo key (lib/state/keys.ts). */
  key: string;
  /** The item's last rows: all of them for an item written at once. */
  rows: ItemRows;
  memo: ItemMemo;
  /** The item's memo before, when it belongs to the same owner: the rows it names and the new one does not are deleted. */
  previous: ItemMemo | undefined;
  /**
   * The item's memo before, when it moved to another document: kept under a key no walk
   * enumerates, so that the cleanup pass (this walk's, or the next one's after a crash) retires
   * the old document's rows unless another item still resolves to it.
   */
  retired?: ItemMemo | undefined;
  /** Told once the rows are durable: work a memo HIT must not skip is done here or on the HIT's path too. */
  onRowsDurable?: () => Promise<void> | void;
  /** The item's slot, given up once its last rows are handed to the sink. */
  slot?: ItemSlot | undefined;
}

/**
 * Writes some of an item's rows, every table in one transaction, with the memo entries it holds
 * (engine/item/item-memos.ts) and `last`, the work of its last write; resolves once all of it is
 * durable. A large item calls it once per batch, each batch's rows after the last's.
 */
export async function writeItemRows(
  deps: CommitDeps,
  memos: ItemMemos,
  rows: ItemRows,
  last?: WithinRowsTransaction,
): Promise<void> {
  const carried = memos.carried();
  const work = { memos: carried?.memos, within: last };
  await atStage('upsert', () =>
    deps.sink.write(rows, work).catch(async (error: unknown) => {
      // The vector to copy went with another item's edit: those texts are embedded after all.
      if (!(error instanceof VectorSourceGoneError)) throw error;
      const embeddings = await embedVectorCopies(rows.get(recordEmbeddings) ?? [], {
        client: deps.models.embedder,
        queue: deps.models.queue,
      });
      await deps.sink.write(new Map([...rows, [recordEmbeddings, embeddings]]), work);
    }),
  );
  carried?.committed();
}

/**
 * The item's last write and its memo. Where the store lives in the rows' database, one
 * transaction: the last rows, the stale ones deleted, the memo entries held, the item memo.
 * Elsewhere, in the order the crash-safety rule needs: the rows, then the stale ones deleted,
 * then the debt, then the memo, whose keys name every row the item wrote.
 */
export async function commitItem(deps: CommitDeps, memos: ItemMemos, commit: ItemCommit): Promise<void> {
  const { key, memo, previous, retired } = commit;
  const itemMemos: [string, ItemMemo][] = [[key, memo]];
  if (retired !== undefined) itemMemos.unshift([retiredIdentity(key, memo.opId), retired]);
  const writesIn = memos.writesIn;
  commit.slot?.release();
  if (writesIn !== undefined) {
    await deps.debt.incurOnce();
    await writeItemRows(deps, memos, commit.rows, async (tx) => {
      if (previous !== undefined) await deleteStaleRows(tx, memo, previous);
      await writesIn.putItems(tx, itemMemos);
    });
    await commit.onRowsDurable?.();
    return;
  }
  await writeItemRows(deps, memos, commit.rows);
  await commit.onRowsDurable?.();
  if (previous !== undefined) await atStage('upsert', () => deleteStaleRows(deps.db, memo, previous));
  await deps.debt.incurOnce();
  await atStage('memo', () => deps.store.putItems(itemMemos));
}
