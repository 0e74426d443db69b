-- The hash of the text an embedding was computed from. A re-walk of an edited document
-- re-embeds only owners whose text changed: the table itself is the embedding memo, so
-- vectors are stored once (not again in the engine state store).
ALTER TABLE record_embeddings ADD COLUMN content_sha256 text;
CREATE INDEX record_embeddings_content_idx ON record_embeddings (model, content_sha256);
