// The commit step of an item, file or URL alike, in the order the crash-safety rule needs
// (DESIGN.md 5): its rows durable in the database -> the rows it emitted before and emits no
// longer deleted by key -> its memo in the state store. A walk killed anywhere before the memo
// redoes the item next time (its inner extractor memos still save the model calls); the
// upserts are idempotent by key, so nothing is duplicated.

import type { Database } from '../lib/db/database.ts';
import type { Sink } from '../lib/db/sink.ts';
import type { ItemMemo, StateStore } from '../lib/state/store.ts';
import { upsertItemRows, type ItemRows, type RowKeys } from '../stages/upsert.ts';
import { atStage } from './at-stage.ts';

export interface CommitDeps {
  db: Database;
  sink: Sink;
  store: StateStore;
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
  await atStage('upsert', () => upsertItemRows(deps.sink, deps.db, commit.rows, commit.memo.rows, commit.previousKeys));
  await beforeMemo?.();
  await atStage('memo', () => deps.store.putItem(commit.key, commit.memo));
}
