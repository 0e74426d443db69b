-- Entity mentions of fetched feed articles (reference_items), beside those of documents: a
-- mention has exactly one owner, like a content chunk. Its key is uuid5 of
-- em:{owner id}:{canonical_name}:{entity_type}; a source document id is a random uuid and a
-- reference item id a uuid5 of ref:{url}, so the two owners never share keys.
ALTER TABLE entity_mentions ALTER COLUMN source_document_id DROP NOT NULL;
ALTER TABLE entity_mentions ADD COLUMN reference_item_id uuid REFERENCES reference_items (id) ON DELETE CASCADE;
ALTER TABLE entity_mentions ADD CONSTRAINT entity_mentions_one_owner CHECK (num_nonnulls(source_document_id, reference_item_id) = 1);
CREATE INDEX entity_mentions_reference_item_id_idx ON entity_mentions (reference_item_id);
