// Ties the state store to the database its memos describe (see schema/0003_engine_instance.sql).

import { randomUUID } from 'node:crypto';
import type { Database } from '../lib/db/database.ts';
import type { StateStore } from '../lib/state/store.ts';

/** The database's engine id, created on first use (a row write, not DDL). */
export async function databaseInstanceId(db: Database): Promise<string> {
  await db.query('INSERT INTO engine_instance (singleton, id) VALUES (true, $1) ON CONFLICT (singleton) DO NOTHING', [
    randomUUID(),
  ]);
  const { rows } = await db.query<{ id: string }>('SELECT id FROM engine_instance');
  return rows[0]!.id;
}

/**
 * Makes sure the store's item memos describe this database. When they were built against
 * another one (or the database was wiped), they are dropped so that every item counts as
 * changed; the inner memos stay, since a model's answer for a given text does not depend on
 * which database it lands in. Returns true when the memos were dropped.
 */
export async function bindStoreToDatabase(store: StateStore, db: Database): Promise<boolean> {
  const id = await databaseInstanceId(db);
  const bound = store.boundDatabaseId();
  if (bound === id) return false;
  const hadItems = store.itemCount() > 0;
  await store.clearItems();
  await store.bindDatabase(id);
  return hadItems;
}
