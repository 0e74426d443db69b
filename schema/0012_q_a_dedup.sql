-- Stage 5 (ii), the Q&A dedup proposer (stages/qa-dedup/). q_a_dedup_proposals itself is in
-- 0001 (its foreign keys cascade, so a proposal goes with either of its rows); this adds what
-- the pass reads by, and its one table of its own.

-- The normalised-text block: an exact repeat (case, punctuation and spacing aside) of an
-- answered pair is found through this index whatever its embedding's neighbours are. The same
-- expression and predicate must appear in the pass's query for the index to serve it.
CREATE FUNCTION q_a_dedup_key(question_text text, answer_text text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT md5(btrim(regexp_replace(lower(question_text), '[^[:alnum:]]+', ' ', 'g')) || E'\n' ||
                   btrim(regexp_replace(lower(coalesce(answer_text, '')), '[^[:alnum:]]+', ' ', 'g'))) $$;
CREATE INDEX q_a_extractions_dedup_key_idx ON q_a_extractions (q_a_dedup_key(question_text, answer_text))
  WHERE q_a_is_answered(answer_text);

-- The pairs changed by a walk, read a page at a time in key order (keyset pagination): with the
-- op_id index alone every page would sort all of a full_reprocess's rows again.
CREATE INDEX q_a_extractions_op_id_id_idx ON q_a_extractions (op_id, id);

-- The embedding block: the nearest Q&A pairs (their question and answer embedded together),
-- from an index over the Q&A rows of record_embeddings only.
CREATE INDEX record_embeddings_q_a_hnsw_idx ON record_embeddings USING hnsw (embedding vector_cosine_ops)
  WHERE owner_kind = 'q_a_extraction';

-- Proposals by their first row, for the re-scoring of a changed pair (the second has its index in 0001).
CREATE INDEX q_a_dedup_proposals_a_idx ON q_a_dedup_proposals (q_a_extraction_a);

-- The walks (op_ids) whose Q&A rows the proposer has been through. A walk's pairs are pending
-- until its op_id is here, so a pass that failed (or never ran: the process died first) leaves
-- them to the next walk; an unchanged walk finds every op_id of q_a_extractions here and reads
-- nothing else.
CREATE TABLE q_a_dedup_ops (
  op_id        uuid PRIMARY KEY,
  finished_at  timestamptz NOT NULL DEFAULT now()
);
