// source_documents identity (docs/behaviour/tables.md#source_documents): content hash first (the
// same bytes at a new path are the same document), then the file's own document (an edited file
// keeps its id), else a new id is minted and stored. Items of one walk that carry the same bytes
// share the resolution in flight, so two copies admitted together cannot mint two ids.
//
// Several live files may hold one document (byte-identical copies). An edit to one of them
// must not take the document with it: the others still hold its old content, and would lose
// their rows. So an edited file keeps its document only while no other item resolves to it
// (the state store's index of each document's items); otherwise the edit is a new document.
//
// A distributed walk's workers are processes of their own: one whose resolution is shared also
// claims the hash for its walk in the database (walk_document_claims), and the first claim names
// the document for every worker.

import type { Database } from '../../lib/db/database.ts';
import { mintSourceDocumentId } from '../../lib/ids.ts';
import { currentRunContext } from '../../lib/run-context.ts';
import { fileIdentity, isRetiredIdentity } from '../../lib/state/keys.ts';
import type { StateStore } from '../../lib/state/store.ts';

export class DocumentIdentity {
  readonly #db: Database;
  readonly #store: StateStore;
  readonly #inFlight = new Map<string, Promise<string>>();
  // Within one walk the store's index lags the items in flight, so two kinds of resolution are
  // remembered until the walk ends: documents found by their content (a copy now holds them),
  // and documents an edit is giving new content. Neither kind arises in a cold walk.
  readonly #heldByContent = new Set<string>();
  readonly #rewritten = new Set<string>();

  readonly #shared: boolean;

  /** `shared`: other processes resolve the same walk's items (a distributed walk's workers). */
  constructor(db: Database, store: StateStore, { shared = false }: { shared?: boolean } = {}) {
    this.#db = db;
    this.#store = store;
    this.#shared = shared;
  }

  /** `previous` is the document the file's memo resolved to before this change, if any. */
  resolve(sha256: string, relPath: string, previous: string | undefined): Promise<string> {
    let pending = this.#inFlight.get(sha256);
    if (pending === undefined) {
      pending = this.#lookup(sha256, relPath, previous);
      if (this.#shared) pending = pending.then((id) => this.#claimHash(sha256, id));
      this.#inFlight.set(sha256, pending);
      // A failed lookup must not poison later items with the same bytes.
      pending.catch(() => this.#inFlight.delete(sha256));
    }
    return pending;
  }

  /** Called once the document's row is durable: from then on the database answers. */
  settled(sha256: string): void {
    this.#inFlight.delete(sha256);
  }

  async #lookup(sha256: string, relPath: string, previous: string | undefined): Promise<string> {
    const byHash = await this.#db.query<{ id: string }>(
      'SELECT id FROM source_documents WHERE content_sha256 = $1 ORDER BY created_at, id LIMIT 1',
      [sha256],
    );
    const byContent = byHash.rows[0]?.id;
    // A document an edit of this walk is rewriting no longer has these bytes.
    if (byContent !== undefined && !this.#rewritten.has(byContent)) {
      this.#heldByContent.add(byContent);
      return byContent;
    }
    // Without a memo (a new path, or a lost state store) the row that names this path stands in.
    const own = previous ?? (await this.#documentAt(relPath));
    if (own !== undefined && (await this.#claim(own, fileIdentity(relPath)))) return own;
    return mintSourceDocumentId();
  }

  /** The document the walk's first claim of these bytes named: `id` when this is the first. */
  async #claimHash(sha256: string, id: string): Promise<string> {
    const { rows } = await this.#db.query<{ id: string }>(
      `INSERT INTO walk_document_claims (op_id, content_sha256, source_document_id) VALUES ($1, $2, $3)
       ON CONFLICT (op_id, content_sha256) DO UPDATE SET op_id = walk_document_claims.op_id
       RETURNING source_document_id::text AS id`,
      [currentRunContext().opId, sha256, id],
    );
    return rows[0]!.id;
  }

  async #documentAt(relPath: string): Promise<string | undefined> {
    const { rows } = await this.#db.query<{ id: string }>(
      'SELECT id FROM source_documents WHERE rel_path = $1 ORDER BY updated_at DESC, id LIMIT 1',
      [relPath],
    );
    return rows[0]?.id;
  }

  /** Takes the document for this edit unless another item holds it; true when taken. */
  async #claim(sourceDocumentId: string, identity: string): Promise<boolean> {
    const items = await this.#store.itemsOfDocument(sourceDocumentId);
    // Checked and taken in one step once the store has answered: another item of this walk may
    // have taken it meanwhile.
    if (this.#heldByContent.has(sourceDocumentId) || this.#rewritten.has(sourceDocumentId)) return false;
    if (items.some((other) => other !== identity && !isRetiredIdentity(other))) return false;
    this.#rewritten.add(sourceDocumentId);
    return true;
  }
}
