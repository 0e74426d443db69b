-- The identity of this database as the engine sees it. The engine state store records the id
-- it was built against; a database that was replaced or wiped (a new id, or none) makes the
-- next walk treat every item as changed instead of trusting memos of rows that are gone.
CREATE TABLE engine_instance (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  id          uuid NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
