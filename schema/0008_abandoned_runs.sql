-- A walk whose process ended before the walk did (SIGKILL, a crash) leaves its row in_progress;
-- the next walk closes it with the terminal status abandoned, so the ledger never shows a dead
-- walk as running. Embeddings stranded by such walks before an item's rows became one
-- transaction (their owner row never landed) are removed once here; no walk makes them now.
ALTER TABLE pipeline_runs DROP CONSTRAINT pipeline_runs_status_check;
ALTER TABLE pipeline_runs ADD CONSTRAINT pipeline_runs_status_check
  CHECK (status IN ('in_progress', 'completed', 'failed', 'fence_busy', 'abandoned'));
DELETE FROM record_embeddings e
 WHERE (e.owner_kind = 'content_chunk' AND NOT EXISTS (SELECT 1 FROM content_chunks o WHERE o.id = e.owner_id))
    OR (e.owner_kind = 'q_a_extraction' AND NOT EXISTS (SELECT 1 FROM q_a_extractions o WHERE o.id = e.owner_id))
    OR (e.owner_kind = 'entity_mention' AND NOT EXISTS (SELECT 1 FROM entity_mentions o WHERE o.id = e.owner_id))
    OR (e.owner_kind = 'reference_item' AND NOT EXISTS (SELECT 1 FROM reference_items o WHERE o.id = e.owner_id));
