-- The Q&A pairs' HNSW index of 0012 built again with half the links: m = 8 a node (0012 took
-- pgvector's default, 16), ef_construction 64 as before. The walk inserts every Q&A embedding it
-- lands into this index, and at m = 16 that insert was the largest single cost of a cold walk on
-- the embedded engine (about 25 ms a row there; half of that or less at m = 8). On the Q&A dedup
-- benchmark the pass that reads the index (stages/qa-dedup/candidates.ts, the 20 nearest pairs
-- of each pair) proposes the same pairs as before on both seeds and both engines, where
-- ef_construction 32 as well lost some reworded pairs on the held-out seed (docs/DECISIONS.md
-- "The Q&A index's build parameters", bench/README.md "Q&A dedup proposer").
--
-- Same name, operator class and predicate, so the queries that read it (the pass's, and
-- worker/retrieval.ts's Q&A query) are served by it as before. pgvector keeps m in the graph
-- it built, so a changed reloption alone would leave the old graph: the index is dropped and
-- built again over the Q&A rows already embedded, within this migration's transaction
-- (DROP INDEX locks record_embeddings against reads and writes until the build commits).
DROP INDEX record_embeddings_q_a_hnsw_idx;
CREATE INDEX record_embeddings_q_a_hnsw_idx ON record_embeddings USING hnsw (embedding vector_cosine_ops)
  WITH (m = 8, ef_construction = 64)
  WHERE owner_kind = 'q_a_extraction';
