// The walk's rows in content terms, to compare two deployments of one corpus: ids are minted per
// deployment (a document's at admission), so each row is named by its document's path and what
// it says. An embedding is named by its owner's row, or ORPHAN when that row does not exist.

import type { Database } from '../../lib/db/database.ts';

const CONTENT: Record<string, string> = {
  source_documents: `SELECT rel_path || ' ' || content_sha256 || ' ' || md5(classification::text) FROM source_documents`,
  content_chunks: `SELECT d.rel_path || '#' || c.idx || ' ' || md5(c.text)
                     FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id`,
  q_a_extractions: `SELECT d.rel_path || '#' || q.idx || ' ' || md5(q.question_text || coalesce(q.answer_text, ''))
                      FROM q_a_extractions q JOIN source_documents d ON d.id = q.source_document_id`,
  entity_mentions: `SELECT d.rel_path || ' ' || m.entity_type || ' ' || m.canonical_name || ' ' || m.surface_form
                      FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id`,
  entity_relationships: `SELECT d.rel_path || ' ' || r.source_canonical || ' ' || r.predicate || ' ' || r.target_canonical
                           FROM entity_relationships r JOIN source_documents d ON d.id = r.source_document_id`,
  record_embeddings: `SELECT e.owner_kind || ' ' || coalesce(d.rel_path || '#' || coalesce(c.idx::text, q.idx::text, m.canonical_name), 'ORPHAN')
                              || ' ' || e.content_sha256
                        FROM record_embeddings e
                        LEFT JOIN content_chunks c ON e.owner_kind = 'content_chunk' AND c.id = e.owner_id
                        LEFT JOIN q_a_extractions q ON e.owner_kind = 'q_a_extraction' AND q.id = e.owner_id
                        LEFT JOIN entity_mentions m ON e.owner_kind = 'entity_mention' AND m.id = e.owner_id
                        LEFT JOIN source_documents d ON d.id = coalesce(c.source_document_id, q.source_document_id, m.source_document_id)`,
};

export const WALKED_TABLES = Object.keys(CONTENT);

/** Every walk-written table's rows, sorted, in content terms. */
export async function rowsInContentTerms(db: Database): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [table, sql] of Object.entries(CONTENT)) {
    const { rows } = await db.query<{ row: string }>(`SELECT row FROM (${sql}) AS t(row) ORDER BY 1`);
    out[table] = rows.map((r) => r.row);
  }
  return out;
}
