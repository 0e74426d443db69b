-- Stage 5 (i): the walks whose mentions wait for resolution, instead of a flag on every mention.
-- A walk's first committed write records its op here, in the same transaction; the pass finds
-- the names to decide among that op's mentions (entity_mentions_op_id_idx) and deletes the row
-- once it has decided them all. The flag cost the pass an UPDATE of nearly every mention of a
-- cold walk (the names that founded a root) only to clear it: 7.9 s of a 28.5 s pass on PGlite.
CREATE TABLE entity_resolution_pending (
  op_id       uuid PRIMARY KEY,
  created_at  timestamptz NOT NULL DEFAULT now()
);
-- Mentions a walk flagged before this migration wait under their op, and lose the flag.
INSERT INTO entity_resolution_pending (op_id)
  SELECT DISTINCT op_id FROM entity_mentions WHERE metadata ? 'unresolved';
UPDATE entity_mentions SET metadata = metadata - 'unresolved' WHERE metadata ? 'unresolved';
DROP INDEX entity_mentions_unresolved_idx;
