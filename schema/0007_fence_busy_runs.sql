-- An invocation that found the writer fence held made no pass, and pipeline_runs, the ledger,
-- still records it: with the terminal status fence_busy.
ALTER TABLE pipeline_runs DROP CONSTRAINT pipeline_runs_status_check;
ALTER TABLE pipeline_runs ADD CONSTRAINT pipeline_runs_status_check
  CHECK (status IN ('in_progress', 'completed', 'failed', 'fence_busy'));
