-- The engine state store kept in the database itself (INGEST_STATE_STORE=database,
-- lib/state/database-store.ts): what the lmdb store keeps in its directory (lib/state/store.ts),
-- in three tables, so that every process writing one corpus reads and writes one memo.
-- Identities longer than a btree key allows are keyed by their digest, as in the lmdb store;
-- the identity itself is kept whole beside its key.
CREATE TABLE engine_items (
  item_key           text PRIMARY KEY,
  identity           text NOT NULL,
  -- The item's outer memo: its stamp (what an unchanged walk reads) and the keys of its rows,
  -- apart, so that reading every stamp reads no row key.
  stamp              jsonb NOT NULL,
  row_keys           jsonb NOT NULL,
  source_document_id text NOT NULL
);
CREATE INDEX engine_items_document ON engine_items (source_document_id);

-- Inner memos: extractor and resolver answers by content hash, and the producer's own records.
CREATE TABLE engine_memos (
  key   text PRIMARY KEY,
  value jsonb NOT NULL
);

-- The database and corpus the item memos describe, and run records not yet known to be in the
-- ledger (one key each, under unsettled_run:).
CREATE TABLE engine_meta (
  key   text PRIMARY KEY,
  value jsonb NOT NULL
);
