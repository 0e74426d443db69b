-- The bid-worker's claims on processing_queue (worker/queue.ts, docs/DECISIONS.md "The
-- bid-worker"). claim_token is minted at every claim and every write of a claimed job names it,
-- so a worker whose lease expired and whose job was claimed again can never write a result or an
-- error over the new holder's (the fencing token). claimed_by names the worker for operators.
-- run_after holds a job that failed and waits out its backoff before the next attempt.
ALTER TABLE processing_queue ADD COLUMN claim_token uuid;
ALTER TABLE processing_queue ADD COLUMN claimed_by text;
ALTER TABLE processing_queue ADD COLUMN run_after timestamptz;
-- Expired leases are found without reading the queued backlog.
CREATE INDEX processing_queue_lease_idx ON processing_queue (lease_until) WHERE status = 'running';
