-- A distributed walk (INGEST_WALK_MODE=distributed, engine/walk/distributed.ts): its items run as
-- jobs of the walk_item queue on worker processes, and come back to the walk's coordinator as
-- rows. Both tables hold one walk's rows while it runs; the coordinator deletes them once the walk
-- has ended.

-- What became of one item (engine/item/outcome.ts), with the rows its commit wrote per table and
-- the run counters it moved, so that the coordinator's summary, run record and webhook counters
-- are the ones a walk in one process makes. Written once the item's memo is committed, and taken
-- (deleted as read) by the coordinator: rows of concurrent workers commit in any order, so only
-- taking them leaves none behind a reader's mark. A row whose item's walk has ended is taken by
-- nobody and deleted with the walk's scratch.
CREATE TABLE walk_item_outcomes (
  op_id        uuid NOT NULL,
  path         text NOT NULL,
  outcome      jsonb NOT NULL,
  rows_written jsonb NOT NULL,
  counters     jsonb NOT NULL,
  -- The walk worker that ran the item (host:pid), counted per worker in /metrics.
  worker       text NOT NULL,
  finished_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (op_id, path)
);

-- The document one walk gave to a content hash, so that two workers converting the same bytes
-- at once resolve them to one document, as one process does with its in-flight resolutions
-- (engine/item/identity.ts): the first to claim a hash names the document, the other reads it.
CREATE TABLE walk_document_claims (
  op_id              uuid NOT NULL,
  content_sha256     text NOT NULL,
  source_document_id uuid NOT NULL,
  PRIMARY KEY (op_id, content_sha256)
);

-- The walk_item queue of this application schema. pgboss is one per database, and two
-- application schemas on one database (two deployments, or every test) must never work each
-- other's items: a worker writes to its own schema's tables. So each schema has a queue of its
-- own, named after it (lib/queue/job-queue.ts walkItemQueue), with walk_item's settings
-- (schema/0017_job_queue.sql); 0017's walk_item itself is left unused by walks.
SELECT pgboss.create_queue('walk_item_' || current_schema(), jsonb_build_object(
  'policy', 'standard',
  'partition', false,
  'retryLimit', 2,
  'retryDelay', 0,
  'retryBackoff', false,
  'heartbeatSeconds', 30,
  'expireInSeconds', 3600,
  'retentionSeconds', 604800,
  'deleteAfterSeconds', 86400
));
