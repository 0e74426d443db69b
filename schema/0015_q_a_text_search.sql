-- The bid-worker's lexical evidence (worker/retrieval.ts): answered Q&A pairs found by the words
-- of a question, weighed by how rare each word is among the pairs (its document frequency, read
-- from this index), so a form's rewording of a corpus question finds it by its subject, not by
-- the phrasing it shares with every other question of its kind.
CREATE INDEX q_a_extractions_text_search_idx ON q_a_extractions
  USING gin (to_tsvector('english', question_text || ' ' || coalesce(answer_text, '')));
