-- Which model made the database's vectors (INGEST_EMBEDDING_MODEL; docs/DECISIONS.md "An embedder
-- of the user's choosing"). Vectors of two models never mix: a walk, `ingest search` and
-- template_fill configured with another model stop until `ingest reembed` has re-embedded every
-- owner and recorded its model here. No row: the model of the vectors already there (a database
-- embedded before this table, recorded by its next walk), or none yet (a fresh database,
-- recorded once its first walk has embedded).
CREATE TABLE embedding_model (
  singleton          boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  model              text NOT NULL,
  -- An `ingest reembed` not finished: the model it embeds with (while set, the vectors are of two
  -- models and nothing but reembed uses them), and the last entity root it re-embedded, where a
  -- re-run goes on (entity_names has no model column; record_embeddings rows carry theirs).
  reembed_to         text,
  reembed_after_type text,
  reembed_after_name text,
  recorded_at        timestamptz NOT NULL DEFAULT now()
);
