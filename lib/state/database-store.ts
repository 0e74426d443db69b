// The engine state store kept in the database itself (INGEST_STATE_STORE=database): the five
// things lib/state/store.ts keeps in an lmdb directory, in the tables of
// schema/0020_engine_state.sql, so that every process that writes one corpus (a sidecar without
// a volume of its own, the processes of a distributed walk) reads and writes one memo. The same
// interface, the same rules: a stamp that does not read back as one is removed and reported as
// healed; an identity too long to be a key is kept under its digest and given back whole.

import type { Database, Queryable } from '../db/database.ts';
import type { RunRecord } from '../runs/record.ts';
import {
  isItemStamp,
  isRowKeys,
  itemKeyOf,
  stampOf,
  UNSETTLED_RUN,
  type ItemMemo,
  type ItemStamp,
  type MemoWritesIn,
  type StateStore,
} from './store.ts';

/** Bytes of an identity kept as its own key: well inside a btree entry's limit (about 2,700). */
const MAX_KEY_BYTES = 1024;
/** Identities read from the table at a time when all are listed. */
const LIST_PAGE = 1000;

interface ItemRow {
  identity: string;
  stamp: unknown;
  row_keys?: unknown;
}

export class DatabaseStateStore implements StateStore {
  readonly path: string;
  /** A round trip carries this many files' stamps: a warm walk of millions is thousands of reads. */
  readonly stampsAtOnce = 256;
  readonly #db: Database;
  readonly #itemKey = itemKeyOf(MAX_KEY_BYTES);
  readonly inRowsTransaction: MemoWritesIn = {
    putItems: (tx, entries) => this.#putItems(tx, entries),
    putMemos: (tx, entries) => this.#putMemos(tx, entries),
  };

  /** `db` is lent: the store never closes it. */
  constructor(db: Database) {
    this.#db = db;
    this.path = `the database at ${db.location}`;
  }

  async getItemStamp(identity: string): Promise<{ stamp: ItemStamp | undefined; healed: boolean }> {
    return (await this.getItemStamps([identity]))[0]!;
  }

  async getItemStamps(identities: readonly string[]): Promise<{ stamp: ItemStamp | undefined; healed: boolean }[]> {
    const keys = identities.map((identity) => this.#itemKey(identity));
    const { rows } = await this.#db.query<{ item_key: string; stamp: unknown }>(
      'SELECT item_key, stamp FROM engine_items WHERE item_key = ANY($1::text[])',
      [keys],
    );
    const stamps = new Map(rows.map((row) => [row.item_key, row.stamp]));
    return Promise.all(
      identities.map(async (identity, i) => {
        if (!stamps.has(keys[i]!)) return { stamp: undefined, healed: false };
        const stamp = stamps.get(keys[i]!);
        if (isItemStamp(stamp)) return { stamp, healed: false };
        return { stamp: undefined, healed: await this.#heal(identity) };
      }),
    );
  }

  async getItem(identity: string): Promise<{ memo: ItemMemo | undefined; healed: boolean }> {
    const row = await this.#item(identity, 'identity, stamp, row_keys');
    if (row === undefined) return { memo: undefined, healed: false };
    if (isItemStamp(row.stamp) && isRowKeys(row.row_keys))
      return { memo: { ...row.stamp, rows: row.row_keys }, healed: false };
    return { memo: undefined, healed: await this.#heal(identity) };
  }

  putItem(identity: string, memo: ItemMemo): Promise<void> {
    return this.putItems([[identity, memo]]);
  }

  /** One statement: every memo lands whole, or none does. */
  putItems(entries: readonly (readonly [identity: string, memo: ItemMemo])[]): Promise<void> {
    return this.#putItems(this.#db, entries);
  }

  async removeItem(identity: string): Promise<void> {
    await this.#deleteItem(identity);
  }

  /** A page at a time in key order, so that listing a million items holds a page of them. */
  async *itemIdentities(): AsyncIterable<string> {
    let after = '';
    for (;;) {
      const { rows } = await this.#db.query<{ item_key: string; identity: string }>(
        'SELECT item_key, identity FROM engine_items WHERE item_key > $1 ORDER BY item_key LIMIT $2',
        [after, LIST_PAGE],
      );
      for (const row of rows) yield row.identity;
      if (rows.length < LIST_PAGE) return;
      after = rows.at(-1)!.item_key;
    }
  }

  async itemsOfDocument(sourceDocumentId: string): Promise<string[]> {
    const { rows } = await this.#db.query<{ identity: string }>(
      'SELECT identity FROM engine_items WHERE source_document_id = $1 ORDER BY item_key',
      [sourceDocumentId],
    );
    return rows.map((r) => r.identity);
  }

  async itemCount(): Promise<number> {
    const { rows } = await this.#db.query<{ n: number }>('SELECT count(*)::int AS n FROM engine_items');
    return rows[0]!.n;
  }

  async clearItems(): Promise<void> {
    await this.#db.query('DELETE FROM engine_items');
  }

  async boundDatabaseId(): Promise<string | undefined> {
    return this.#metaText('database_id');
  }

  bindDatabase(databaseId: string): Promise<void> {
    return this.#putMeta('database_id', databaseId);
  }

  async boundCorpusRoot(): Promise<string | undefined> {
    return this.#metaText('corpus_root');
  }

  bindCorpusRoot(root: string): Promise<void> {
    return this.#putMeta('corpus_root', root);
  }

  async unsettledRuns(): Promise<RunRecord[]> {
    const { rows } = await this.#db.query<{ value: RunRecord }>(
      'SELECT value FROM engine_meta WHERE starts_with(key, $1) ORDER BY key',
      [UNSETTLED_RUN],
    );
    return rows.map((r) => r.value);
  }

  putUnsettledRun(record: RunRecord): Promise<void> {
    return this.#putMeta(UNSETTLED_RUN + record.opId, record);
  }

  async removeUnsettledRun(opId: string): Promise<void> {
    await this.#db.query('DELETE FROM engine_meta WHERE key = $1', [UNSETTLED_RUN + opId]);
  }

  async getMemo(key: string): Promise<unknown> {
    const { rows } = await this.#db.query<{ value: unknown }>('SELECT value FROM engine_memos WHERE key = $1', [key]);
    return rows[0]?.value;
  }

  putMemo(key: string, value: unknown): Promise<void> {
    return this.#putMemos(this.#db, [[key, value]]);
  }

  async removeMemo(key: string): Promise<void> {
    await this.#db.query('DELETE FROM engine_memos WHERE key = $1', [key]);
  }

  async memoCount(): Promise<number> {
    const { rows } = await this.#db.query<{ n: number }>('SELECT count(*)::int AS n FROM engine_memos');
    return rows[0]!.n;
  }

  /** Deletes everything the store holds (`ingest state reset`): the next walk re-extracts every item. */
  async reset(): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await tx.query('DELETE FROM engine_items');
      await tx.query('DELETE FROM engine_memos');
      await tx.query('DELETE FROM engine_meta');
    });
  }

  /** The database is lent by the lifespan, which closes it. */
  async close(): Promise<void> {}

  async #item(identity: string, columns: string): Promise<ItemRow | undefined> {
    const { rows } = await this.#db.query<ItemRow>(`SELECT ${columns} FROM engine_items WHERE item_key = $1`, [
      this.#itemKey(identity),
    ]);
    return rows[0];
  }

  /** Removes an entry that does not read back as a memo; true when there was one to remove. */
  async #heal(identity: string): Promise<boolean> {
    return (await this.#deleteItem(identity)) > 0;
  }

  async #deleteItem(identity: string): Promise<number> {
    const { rowCount } = await this.#db.query('DELETE FROM engine_items WHERE item_key = $1', [
      this.#itemKey(identity),
    ]);
    return rowCount;
  }

  async #metaText(key: string): Promise<string | undefined> {
    const { rows } = await this.#db.query<{ value: unknown }>('SELECT value FROM engine_meta WHERE key = $1', [key]);
    const value = rows[0]?.value;
    return typeof value === 'string' ? value : undefined;
  }

  #putMeta(key: string, value: unknown): Promise<void> {
    return this.#putValues(this.#db, 'engine_meta', [[key, value]]);
  }

  #putMemos(on: Queryable, entries: readonly (readonly [key: string, value: unknown])[]): Promise<void> {
    return this.#putValues(on, 'engine_memos', entries);
  }

  async #putItems(on: Queryable, entries: readonly (readonly [identity: string, memo: ItemMemo])[]): Promise<void> {
    if (entries.length === 0) return;
    await on.query(
      `INSERT INTO engine_items (item_key, identity, stamp, row_keys, source_document_id)
       SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::jsonb[], $5::text[])
       ON CONFLICT (item_key) DO UPDATE
         SET identity = excluded.identity, stamp = excluded.stamp, row_keys = excluded.row_keys,
             source_document_id = excluded.source_document_id`,
      [
        entries.map(([identity]) => this.#itemKey(identity)),
        entries.map(([identity]) => identity),
        entries.map(([, memo]) => JSON.stringify(stampOf(memo))),
        entries.map(([, memo]) => JSON.stringify(memo.rows)),
        entries.map(([, memo]) => memo.sourceDocumentId),
      ],
    );
  }

  /**
   * Values under their keys in one of the two key-value tables, replacing what was there, in one
   * statement. In key order: processes writing the same memos in their own transactions then
   * take the rows' locks in one order, and none waits on another in a cycle.
   */
  async #putValues(
    on: Queryable,
    table: 'engine_memos' | 'engine_meta',
    entries: readonly (readonly [key: string, value: unknown])[],
  ): Promise<void> {
    if (entries.length === 0) return;
    const sorted = [...new Map(entries)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    await on.query(
      `INSERT INTO ${table} (key, value)
       SELECT * FROM unnest($1::text[], $2::jsonb[])
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [sorted.map(([key]) => key), sorted.map(([, value]) => JSON.stringify(value))],
    );
  }
}
