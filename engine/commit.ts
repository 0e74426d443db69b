// The commit step of an item, file or URL alike, in the order the crash-safety rule needs
// (DESIGN.md 5): its rows durable in the database -> the rows it emitted before and emits no
// longer deleted by key -> the producer's debt (once per walk, lib/state/producer-debt.ts) ->
// its memo in the state store. A walk killed anywhere before the memo redoes the item next
// time (its inner extractor memos still save the model calls); the upserts are idempotent by
// key, so nothing is duplicated. The debt goes before the memo because the memo is what lets
// the next walk pass the item over: no change is passed over unless a producer run is owed.

import type { Database } from '../lib/db/database.ts';
import type { Sink } from '../lib/db/sink.ts';
import { recordEmbeddings } from '../lib/db/tables.ts';
import { VectorSourceGoneError } from '../lib/db/upsert-rows.ts';
import type { Models } from '../lib/models.ts';
import type { WalkDebt } from '../lib/state/producer-debt.ts';
import type { ItemMemo, StateStore } from '../lib/state/store.ts';
import { embedVectorCopies } from '../stages/embed.ts';
import { upsertItemRows, type ItemRows, type RowKeys } from '../stages/upsert.ts';
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
  /** The keys the item owned before, when they belong to the same owner: the stale ones are deleted. */
  previousKeys: RowKeys | undefined;
}

/** `beforeMemo` runs once the rows are durable and before the memo: work that must not be skipped by a memo HIT. */
export async function commitItem(
  deps: CommitDeps,
  commit: ItemCommit,
  beforeMemo?: () => Promise<void>,
): Promise<void> {
  const upsert = (rows: ItemRows) => upsertItemRows(deps.sink, deps.db, rows, commit.memo.rows, commit.previousKeys);
  await atStage('upsert', () =>
    upsert(commit.rows).catch(async (error: unknown) => {
      // The vector to copy went with another item's edit: those texts are embedded after all.
      if (!(error instanceof VectorSourceGoneError)) throw error;
      const embeddings = await embedVectorCopies(commit.rows.get(recordEmbeddings) ?? [], {
        client: deps.models.embedder,
        queue: deps.models.queue,
      });
      await upsert(new Map([...commit.rows, [recordEmbeddings, embeddings]]));
    }),
  );
  await deps.debt.incurOnce();
  await beforeMemo?.();
  await atStage('memo', () => deps.store.putItem(commit.key, commit.memo));
}
