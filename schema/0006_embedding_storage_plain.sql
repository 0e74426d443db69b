-- Vectors stay inline in their row. pgvector's type asks for EXTERNAL storage, so a 4 KB
-- vector(1024) went out of line: every write added three TOAST chunks and their index entries,
-- every read fetched them back. PLAIN keeps it in the heap tuple (about 4.2 KB, one row per
-- 8 KB page), uncompressed since float4s do not compress. The cost is disk, about 1.4 times
-- the table. A row must now fit a page: a vector of more than about 2,000 dimensions needs
-- EXTERNAL again. Rows written before this migration keep their TOAST until next updated.
ALTER TABLE record_embeddings ALTER COLUMN embedding SET STORAGE PLAIN;
