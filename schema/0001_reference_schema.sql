-- The platform's reference schema: every table docs/behaviour/tables.md names. In production
-- these migrations belong to the platform; this copy serves embedded mode and the tests.
-- Columns docs/behaviour/tables.md does not show are listed and explained in docs/DECISIONS.md.

CREATE EXTENSION IF NOT EXISTS vector;

-- Permanent provenance, one row per document. Identity is content-hash first; the id is
-- minted at admission and stored, never re-derived; rel_path is a mutable attribute.
CREATE TABLE source_documents (
  id              uuid PRIMARY KEY,
  rel_path        text NOT NULL,
  content_sha256  text NOT NULL,
  byte_size       bigint NOT NULL CHECK (byte_size >= 0),
  media_type      text NOT NULL,
  title           text,
  classification  jsonb,
  op_id           uuid NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX source_documents_content_sha256_idx ON source_documents (content_sha256);
CREATE INDEX source_documents_rel_path_idx ON source_documents (rel_path);
CREATE INDEX source_documents_op_id_idx ON source_documents (op_id);

-- One row per fetched passed feed URL; id is uuid5 of ref:{url}.
CREATE TABLE reference_items (
  id              uuid PRIMARY KEY,
  url             text NOT NULL UNIQUE,
  title           text,
  content_sha256  text NOT NULL,
  classification  jsonb,
  fetched_at      timestamptz NOT NULL,
  op_id           uuid NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reference_items_op_id_idx ON reference_items (op_id);

-- Text chunks of a document or of a reference item (exactly one owner).
CREATE TABLE content_chunks (
  id                  uuid PRIMARY KEY,
  source_document_id  uuid REFERENCES source_documents (id) ON DELETE CASCADE,
  reference_item_id   uuid REFERENCES reference_items (id) ON DELETE CASCADE,
  idx                 integer NOT NULL CHECK (idx >= 0),
  text                text NOT NULL,
  char_start          integer NOT NULL,
  char_end            integer NOT NULL,
  op_id               uuid NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CHECK (num_nonnulls(source_document_id, reference_item_id) = 1)
);
CREATE INDEX content_chunks_source_document_id_idx ON content_chunks (source_document_id, idx);
CREATE INDEX content_chunks_reference_item_id_idx ON content_chunks (reference_item_id, idx);

-- Raw Q&A extractions; id is uuid5 of qa:{source_document_id}:{idx}. answer_text may be NULL
-- as an extraction result, but the walk writes no row for a blank answer
-- (docs/behaviour/stages.md#blank-form-gate).
CREATE TABLE q_a_extractions (
  id                  uuid PRIMARY KEY,
  source_document_id  uuid NOT NULL REFERENCES source_documents (id) ON DELETE CASCADE,
  idx                 integer NOT NULL CHECK (idx >= 0),
  question_text       text NOT NULL,
  answer_text         text,
  metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
  op_id               uuid NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX q_a_extractions_source_document_id_idx ON q_a_extractions (source_document_id, idx);
CREATE INDEX q_a_extractions_op_id_idx ON q_a_extractions (op_id);

-- id is uuid5 of em:{source_document_id}:{canonical_name}:{entity_type}. Nothing references
-- this table by foreign key (docs/behaviour/tables.md#row-keys). metadata.curation_pinned marks
-- curated rows.
CREATE TABLE entity_mentions (
  id                  uuid PRIMARY KEY,
  source_document_id  uuid NOT NULL REFERENCES source_documents (id) ON DELETE CASCADE,
  canonical_name      text NOT NULL,
  entity_type         text NOT NULL,
  surface_form        text NOT NULL,
  confidence          real,
  metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
  op_id               uuid NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entity_mentions_source_document_id_idx ON entity_mentions (source_document_id);
CREATE INDEX entity_mentions_canonical_idx ON entity_mentions (entity_type, canonical_name);
CREATE INDEX entity_mentions_op_id_idx ON entity_mentions (op_id);
CREATE INDEX entity_mentions_pinned_idx ON entity_mentions (id) WHERE (metadata ->> 'curation_pinned')::boolean;

-- id is uuid5 of er:{source_document_id}:{source_c}:{predicate}:{target_c}.
CREATE TABLE entity_relationships (
  id                  uuid PRIMARY KEY,
  source_document_id  uuid NOT NULL REFERENCES source_documents (id) ON DELETE CASCADE,
  source_canonical    text NOT NULL,
  predicate           text NOT NULL,
  target_canonical    text NOT NULL,
  confidence          real,
  metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
  op_id               uuid NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entity_relationships_source_document_id_idx ON entity_relationships (source_document_id);
CREATE INDEX entity_relationships_op_id_idx ON entity_relationships (op_id);

-- The single home of vectors: one per owned record. The owner is polymorphic, so there is no
-- foreign key; the walk deletes an owner's embedding when it deletes the owner.
CREATE TABLE record_embeddings (
  owner_kind  text NOT NULL CHECK (owner_kind IN ('content_chunk', 'q_a_extraction', 'entity_mention', 'reference_item')),
  owner_id    uuid NOT NULL,
  model       text NOT NULL,
  embedding   vector(1024) NOT NULL,
  op_id       uuid NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner_kind, owner_id)
);
CREATE INDEX record_embeddings_op_id_idx ON record_embeddings (op_id);

-- The ledger of feed URLs; passed = true selects a row for ingestion, and the walk links it
-- back to its reference_items row.
CREATE TABLE feed_articles (
  id                 uuid PRIMARY KEY,
  url                text NOT NULL,
  title              text,
  passed             boolean NOT NULL DEFAULT false,
  reference_item_id  uuid REFERENCES reference_items (id) ON DELETE SET NULL,
  linked_at          timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feed_articles_passed_unlinked_idx ON feed_articles (created_at, id) WHERE passed AND reference_item_id IS NULL;
CREATE INDEX feed_articles_url_idx ON feed_articles (url);

-- One row per pipeline invocation: created in_progress at flow start, UPDATEd at flow end.
CREATE TABLE pipeline_runs (
  id           uuid PRIMARY KEY,
  op_id        uuid NOT NULL UNIQUE,
  flow         text NOT NULL DEFAULT 'walk',
  status       text NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  result       jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX pipeline_runs_started_at_idx ON pipeline_runs (started_at DESC);

-- Jobs for the bid-worker, claimed with FOR UPDATE SKIP LOCKED under a lease.
CREATE TABLE processing_queue (
  id           uuid PRIMARY KEY,
  job          text NOT NULL CHECK (job IN ('analyse_form', 'template_fill')),
  payload      jsonb NOT NULL DEFAULT '{}'::jsonb,
  status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
  attempts     integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 3,
  lease_until  timestamptz,
  result       jsonb,
  error        text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processing_queue_claim_idx ON processing_queue (created_at) WHERE status IN ('queued', 'running');

-- Proposals of the Q&A dedup proposer (stage 5 ii): walks never merge curated records, they
-- propose; id is uuid5 of dedup:{a}:{b} with a < b.
CREATE TABLE q_a_dedup_proposals (
  id                 uuid PRIMARY KEY,
  q_a_extraction_a   uuid NOT NULL REFERENCES q_a_extractions (id) ON DELETE CASCADE,
  q_a_extraction_b   uuid NOT NULL REFERENCES q_a_extractions (id) ON DELETE CASCADE,
  similarity         real NOT NULL,
  status             text NOT NULL DEFAULT 'proposed' CHECK (status IN ('proposed', 'accepted', 'rejected')),
  op_id              uuid NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CHECK (q_a_extraction_a < q_a_extraction_b)
);
CREATE INDEX q_a_dedup_proposals_b_idx ON q_a_dedup_proposals (q_a_extraction_b);
