// @engine
// Flushes side by side (docs/DECISIONS.md "Flushes side by side"): the sink runs flushes of
// disjoint writes at once, and orders those that share a row key or a memo entry; two sinks (two
// walk workers) share nothing but the database, whose locks they meet in one order.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Database, Queryable } from '../lib/db/database.ts';
import { Sink, type WriteWork } from '../lib/db/sink.ts';
import { recordEmbeddings, sourceDocuments, VectorCopy, type Row, type TableRows } from '../lib/db/tables.ts';
import { VectorSourceGoneError } from '../lib/db/upsert-rows.ts';
import { DatabaseStateStore } from '../lib/state/database-store.ts';
import { openTestDatabase, tableRows, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase();
});
test.after.each(async () => {
  await t.dispose();
});

const documentRow = (id: string, title: string): Row => ({
  id,
  rel_path: `docs/${id}.md`,
  content_sha256: `sha-${id}`,
  byte_size: 10,
  media_type: 'text/markdown',
  title,
  classification: null,
  op_id: randomUUID(),
});

const embeddingRow = (owner: string, embedding: unknown, hash: string): Row => ({
  owner_kind: 'content_chunk',
  owner_id: owner,
  model: 'text-embedding-3-large',
  embedding,
  content_sha256: hash,
  op_id: randomUUID(),
});

const vector = (value: number): number[] => Array.from({ length: 1024 }, () => value);

/**
 * The same database, whose first transaction sleeps before its work: that flush reaches its rows
 * after a later flush could have written them, were the two not ordered.
 */
function slowFirstTransaction(db: Database, ms: number): Database {
  let first = true;
  return {
    ...db,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      db.transaction(async (tx) => {
        if (first) {
          first = false;
          await sleep(ms);
        }
        return fn(tx);
      }),
  };
}

/** Each write a flush of its own, up to four at once. */
const eager = (db: Database) => new Sink(db, { batchRows: 1, flushMs: 0, flushes: 4 });

test('a later write of a row key lands last, though the earlier flush is slower to reach it', async () => {
  const sink = eager(slowFirstTransaction(t.db, 300));
  const id = randomUUID();
  const other = randomUUID();
  const order: string[] = [];
  const earlier = sink
    .write(tableRows(sourceDocuments, [documentRow(id, 'earlier')]))
    .then(() => order.push('earlier'));
  // A disjoint write does not wait for the slow flush.
  const disjoint = sink
    .write(tableRows(sourceDocuments, [documentRow(other, 'disjoint')]))
    .then(() => order.push('disjoint'));
  const later = sink.write(tableRows(sourceDocuments, [documentRow(id, 'later')])).then(() => order.push('later'));
  await Promise.all([earlier, disjoint, later]);
  await sink.close();
  const { rows } = await t.db.query<{ title: string }>('SELECT title FROM source_documents WHERE id = $1', [id]);
  assert.equal(rows, [{ title: 'later' }]);
  // PGlite has one session, so one flush at a time: there the disjoint write waits its turn.
  assert.equal(order, t.db.kind === 'pglite' ? ['earlier', 'disjoint', 'later'] : ['disjoint', 'earlier', 'later']);
});

test('a later write of a memo entry lands last; entries of other keys do not wait', async () => {
  const sink = eager(slowFirstTransaction(t.db, 300));
  const store = new DatabaseStateStore(t.db);
  const memos = (entries: [string, unknown][]): WriteWork => ({ memos: { writer: store.inRowsTransaction!, entries } });
  const order: string[] = [];
  // Two items whose windows are the same share the entry 'window:1'.
  const earlier = sink
    .write(tableRows(sourceDocuments, [documentRow(randomUUID(), 'a')]), memos([['window:1', 'earlier']]))
    .then(() => order.push('earlier'));
  const disjoint = sink
    .write(tableRows(sourceDocuments, [documentRow(randomUUID(), 'b')]), memos([['window:2', 'disjoint']]))
    .then(() => order.push('disjoint'));
  const later = sink
    .write(tableRows(sourceDocuments, [documentRow(randomUUID(), 'c')]), memos([['window:1', 'later']]))
    .then(() => order.push('later'));
  await Promise.all([earlier, disjoint, later]);
  await sink.close();
  assert.is(await store.getMemo('window:1'), 'later');
  assert.is(await store.getMemo('window:2'), 'disjoint');
  assert.equal(order, t.db.kind === 'pglite' ? ['earlier', 'disjoint', 'later'] : ['disjoint', 'earlier', 'later']);
});

test('a vector copy racing the edit of its only source copies the right vector or fails as vector_source_gone', async () => {
  // The source: one owner of text h, committed, as knownTexts requires before a copy is made.
  const source = randomUUID();
  const rows = (list: Row[]): TableRows => tableRows(recordEmbeddings, list);
  for (let trial = 0; trial < 8; trial++) {
    const hash = `h-${trial}`;
    const setup = eager(t.db);
    await setup.write(rows([embeddingRow(source, vector(0.5), hash)]));
    await setup.close();
    // The source's owner is edited to another text while another item copies h.
    const sink = eager(trial % 2 === 0 ? slowFirstTransaction(t.db, 50) : t.db);
    const copier = randomUUID();
    const [edit, copy] = await Promise.allSettled([
      sink.write(rows([embeddingRow(source, vector(-0.25), `edited-${trial}`)])),
      sink.write(rows([embeddingRow(copier, new VectorCopy('text h'), hash)])),
    ]);
    await sink.close();
    assert.is(edit.status, 'fulfilled');
    if (copy.status === 'rejected') {
      assert.instance(copy.reason, VectorSourceGoneError);
      continue;
    }
    const { rows: copied } = await t.db.query<{ first: number }>(
      'SELECT (embedding::real[])[1] AS first FROM record_embeddings WHERE owner_id = $1',
      [copier],
    );
    assert.equal(copied, [{ first: 0.5 }], 'the copy holds the vector of text h, never the edited one');
  }
});

test('two sinks (two walk workers) writing the same row key and memo entries in opposite orders never deadlock', async () => {
  const store = new DatabaseStateStore(t.db);
  const writer = store.inRowsTransaction!;
  const id = randomUUID();
  for (let trial = 0; trial < 6; trial++) {
    const [one, two] = [eager(t.db), eager(t.db)];
    const results = await Promise.allSettled([
      one.write(tableRows(sourceDocuments, [documentRow(id, `one-${trial}`)]), {
        memos: {
          writer,
          entries: [
            ['shared:a', `one-${trial}`],
            ['shared:b', `one-${trial}`],
          ],
        },
      }),
      two.write(tableRows(sourceDocuments, [documentRow(id, `two-${trial}`)]), {
        memos: {
          writer,
          entries: [
            ['shared:b', `two-${trial}`],
            ['shared:a', `two-${trial}`],
          ],
        },
      }),
    ]);
    await Promise.all([one.close(), two.close()]);
    assert.equal(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled'],
      String(results.find((r) => r.status === 'rejected')?.reason),
    );
    // Whichever committed last holds the row and both entries: no mix of the two.
    const { rows } = await t.db.query<{ title: string }>('SELECT title FROM source_documents WHERE id = $1', [id]);
    const last = rows[0]!.title;
    assert.ok([`one-${trial}`, `two-${trial}`].includes(last));
    assert.is(await store.getMemo('shared:a'), last);
    assert.is(await store.getMemo('shared:b'), last);
  }
});

test.run();
