-- The producer (stages/producer/): the concepts of the knowledge bundle. The bundle's files are
-- rendered from these rows alone, so a bundle lost or half-written is rebuilt from here without
-- a model call, and record://concept/<id> citations resolve to a row here.
--
-- fingerprint is a digest of the rows that feed the concept (its mentions and relationships,
-- or its documents' classification topics, each with its op_id), as the last producer run saw
-- them: a run compares it with the digest of the rows as they stand, and only a concept whose
-- digest moved has its evidence read again. evidence_sha256 is the digest of that evidence as
-- the model was shown it: only a concept whose evidence moved is drafted again.
CREATE TABLE bundle_concepts (
  id               uuid PRIMARY KEY,
  kind             text NOT NULL CHECK (kind IN ('entity', 'topic')),
  -- The entity type of an entity concept; '' for a topic.
  entity_type      text NOT NULL,
  name             text NOT NULL,
  -- Relative to the bundle root, assigned once and kept, so links and readers' bookmarks hold.
  path             text NOT NULL UNIQUE,
  fingerprint      text NOT NULL,
  evidence_sha256  text NOT NULL,
  -- The drafted document: title, description, sections of cited claims, citations, related concepts.
  document         jsonb NOT NULL,
  drafted_at       timestamptz NOT NULL,
  -- Set when its evidence vanished: the next bundle leaves it out and logs its removal, then the row goes.
  vanished_at      timestamptz,
  -- Written since the bundle was last published: its page (and the pages linking to it) must be
  -- rendered again; cleared once a bundle holding it is switched in.
  pending          boolean NOT NULL DEFAULT true,
  op_id            uuid NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (kind, entity_type, name)
);

CREATE INDEX bundle_concepts_pending_idx ON bundle_concepts (id) WHERE pending OR vanished_at IS NOT NULL;

-- A concept's relationships are read by either end's name.
CREATE INDEX entity_relationships_source_canonical_idx ON entity_relationships (source_canonical);
CREATE INDEX entity_relationships_target_canonical_idx ON entity_relationships (target_canonical);
