// The commit step of an item, file or URL alike, in the order the crash-safety rule needs
// (docs/behaviour/stages.md#the-flow): its rows durable in the database -> the rows it emitted
// before and emits no longer deleted by key -> the producer's debt (once per walk,
// lib/state/producer-debt.ts) -> its memo in the state store. A large item's rows land in several
// writes, one batch after another (engine/item/file.ts), its memo after the last. A walk killed anywhere
// before the memo redoes the item next time (its inner extractor memos still save the model calls);
// the upserts are idempotent by key and the keys are derived, so the redo ends with exactly the
// rows of an unbroken walk. The debt goes before the memo because the memo is what lets the next
// walk pass the item over: no change is passed over unless a producer run is owed.

import type { Database } from '../../lib/db/database.ts';
import type { Sink } from '../../lib/db/sink.ts';
import { recordEmbeddings } from '../../lib/db/tables.ts';
import { VectorSourceGoneError } from '../../lib/db/upsert-rows.ts';
import type { Models } from '../../lib/models.ts';
import type { WalkDebt } from '../../lib/state/producer-debt.ts';
import type { ItemMemo, StateStore } from '../../lib/state/store.ts';
import { embedVectorCopies } from '../../stages/embed.ts';
import { deleteStaleRows, type ItemRows } from '../../stages/upsert.ts';
import { atStage } from './at-stage.ts';

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
  rows: ItemRows;
  memo: ItemMemo;
  /** The item's memo before, when it belongs to the same owner: the rows it names and the new one does not are deleted. */
  previous: ItemMemo | undefined;
}

/** The whole commit of an item whose rows are one write (a feed URL's; a file's that fits one batch). */
export async function commitItem(
  deps: CommitDeps,
  commit: ItemCommit,
  beforeMemo?: () => Promise<void>,
): Promise<void> {
  await writeItemRows(deps, commit.rows);
  await finishItem(deps, commit, beforeMemo);
}

/**
 * Writes some of an item's rows, every table in one transaction; resolves once they are
 * durable. A large item calls it once per batch, each batch's rows after the last's.
 */
export async function writeItemRows(deps: CommitDeps, rows: ItemRows): Promise<void> {
  await atStage('upsert', () =>
    deps.sink.write(rows).catch(async (error: unknown) => {
      // The vector to copy went with another item's edit: those texts are embedded after all.
      if (!(error instanceof VectorSourceGoneError)) throw error;
      const embeddings = await embedVectorCopies(rows.get(recordEmbeddings) ?? [], {
        client: deps.models.embedder,
        queue: deps.models.queue,
      });
      await deps.sink.write(new Map([...rows, [recordEmbeddings, embeddings]]));
    }),
  );
}

/**
 * After the item's last write: its stale rows deleted, then `beforeMemo` (work that must not be
 * skipped by a memo HIT), then the memo, whose keys name every row the item wrote.
 */
export async function finishItem(
  deps: CommitDeps,
  commit: Omit<ItemCommit, 'rows'>,
  beforeMemo?: () => Promise<void>,
): Promise<void> {
  const { previous } = commit;
  if (previous !== undefined) await atStage('upsert', () => deleteStaleRows(deps.db, commit.memo, previous));
  await deps.debt.incurOnce();
  await beforeMemo?.();
  await atStage('memo', () => deps.store.putItem(commit.key, commit.memo));
}
