-- Stage 5 (i): a name's root may be of another type. Real models (and the mock) type one entity
-- differently across documents ("Northwind Tradres" a person, "Northwind Traders" an
-- organisation); the pair resolver may join such a name to a near-identical root of another
-- type, and then its mentions move under the root's name and type. A root is a name naming
-- itself in its own type: name = canonical_name AND entity_type = canonical_type.
ALTER TABLE entity_names ADD COLUMN canonical_type text;
UPDATE entity_names SET canonical_type = entity_type;
ALTER TABLE entity_names ALTER COLUMN canonical_type SET NOT NULL;
-- The exact block meets roots of every type by their normalised name.
DROP INDEX entity_names_root_normalised_idx;
CREATE INDEX entity_names_root_normalised_idx ON entity_names (normalised)
  WHERE name = canonical_name AND entity_type = canonical_type;
-- The names under a root, by the root's type and name.
DROP INDEX entity_names_canonical_idx;
CREATE INDEX entity_names_canonical_idx ON entity_names (canonical_type, canonical_name);
