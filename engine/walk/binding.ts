// Ties the state store to the database its memos describe (see schema/0003_engine_instance.sql)
// and to the corpus directory they were built from.

import { randomUUID } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import type { Database } from '../../lib/db/database.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { IngestError } from '../../lib/errors.ts';

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
  const bound = await store.boundDatabaseId();
  if (bound === id) return false;
  const hadItems = (await store.itemCount()) > 0;
  await store.clearItems();
  await store.bindDatabase(id);
  return hadItems;
}

/** The walk's corpus is not the one the state store's memos describe. */
export class CorpusRootChangedError extends IngestError {
  constructor(bound: string, root: string) {
    super(
      'corpus_root_changed',
      `the state store describes the corpus at ${bound}, and this walk's corpus is ${root}; walking it would remove ` +
        `the rows of every document not in it. If the corpus really moved, walk once with --rebind-corpus ` +
        `(POST /walk {"rebind_corpus": true}) to bind the store to it`,
    );
  }
}

/**
 * Makes sure the store's item memos describe this corpus directory (by its real path, so a link
 * to the same directory is the same corpus). The first walk binds it; a walk of another root is
 * refused unless `rebind` says the corpus really moved. An unmounted volume or a mistyped path
 * that happens to exist would otherwise read as the whole corpus deleted.
 */
export async function bindStoreToCorpus(store: StateStore, sourcePath: string, rebind: boolean): Promise<void> {
  const root = await realpath(sourcePath);
  const bound = await store.boundCorpusRoot();
  if (bound === root) return;
  // A store with no item memos has nothing to lose: it follows the corpus it is given.
  if (bound !== undefined && !rebind && (await store.itemCount()) > 0) throw new CorpusRootChangedError(bound, root);
  await store.bindCorpusRoot(root);
}
