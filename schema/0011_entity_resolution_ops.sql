-- Stage 5 (i): the walks (op_ids of entity_mentions) entity resolution has been through, instead
-- of a flag on every mention it had still to decide (lib/db/op-ledger.ts). The mentions to
-- look at are those whose op_id is not here; the pass lists an op once every name its mentions
-- carry is decided and moved. The flag cost the pass an UPDATE of nearly every mention of a
-- cold walk (the names that founded a root) only to clear it: 7.9 s of a 28.5 s pass on PGlite
-- at 1,000 documents.
CREATE TABLE entity_resolution_ops (
  op_id        uuid PRIMARY KEY,
  finished_at  timestamptz NOT NULL DEFAULT now()
);
-- Walks whose every mention was resolved are done; one that left a mention flagged is not.
INSERT INTO entity_resolution_ops (op_id)
  SELECT op_id FROM entity_mentions
  EXCEPT SELECT op_id FROM entity_mentions WHERE metadata ? 'unresolved';
UPDATE entity_mentions SET metadata = metadata - 'unresolved' WHERE metadata ? 'unresolved';
DROP INDEX entity_mentions_unresolved_idx;
