// One passed feed URL's life, from fetch to linked rows: the URL counterpart of file.ts.
//
//   safe fetch -> memo check on the fetched bytes -> clean (the /extract cleaner) -> chunk ->
//   extract (classification, entity mentions) -> embed -> commit (rows durable, stale keys
//   deleted, backlink, memo: commit.ts)
//
// The outer memo is keyed by the URL's identity and holds the sha256 of the fetched bytes:
// the same bytes on a later walk change nothing and spend no tokens (full_reprocess bypasses
// it). Beside it, the page's cache validators (ETag, Last-Modified) as of those bytes go back
// with the next fetch, so that an unchanged page costs a 304 and no body. The reference_items row is keyed by uuid5 of ref:{url}; its chunks and mentions are
// keyed by that id exactly as a document's are by its id. Every fetch goes through the
// SSRF-safe fetch, so a hostile ledger row fails its own item with a named error.

import { cleanHtml } from '../../stages/convert/html/index.ts';
import { chunkText } from '../../stages/chunk.ts';
import { embedOwners } from '../../stages/embed.ts';
import { extractDeps, extractDocument, type ExtractorName } from '../../stages/extract/index.ts';
import { linkFeedRows } from '../../stages/backlink.ts';
import type { UrlItem } from '../../stages/source.ts';
import type { ItemRows } from '../../stages/upsert.ts';
import type { Database } from '../../lib/db/database.ts';
import type { Sink } from '../../lib/db/sink.ts';
import {
  contentChunks,
  entityMentions,
  recordEmbeddings,
  referenceItems,
  type Row,
  type TableSpec,
} from '../../lib/db/tables.ts';
import { referenceItemKey } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import { fetchIfChanged, type CacheValidators, type FetchedPage, type FetchPolicy } from '../../lib/net/safe-fetch.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { atStage } from './at-stage.ts';
import { commitItem } from './commit.ts';
import type { ItemSlot } from './slot.ts';
import { ItemMemos } from './item-memos.ts';
import type { ItemOutcome } from './outcome.ts';
import { chunkRowsOf, embeddingInputs, namedRowsOf, OwnedKeys, type RowOwner } from './item-rows.ts';
import type { AliasSnapshot } from '../../lib/aliases.ts';
import type { Models } from '../../lib/models.ts';
import { urlIdentity } from '../../lib/state/keys.ts';
import { countEvent, currentRunContext } from '../../lib/run-context.ts';
import type { WalkDebt } from '../../lib/state/producer-debt.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { IngestError } from '../../lib/errors.ts';

/** The extractors a feed article gets: what it is about and who it names (docs/DECISIONS.md). */
export const URL_EXTRACTORS: readonly ExtractorName[] = Object.freeze(['classification', 'entities']);

/** A fetched page the cleaner found nothing in: one item fails, by name. */
export class UnusablePageError extends IngestError {
  declare readonly code: 'empty_page' | 'not_html';
  constructor(code: 'empty_page' | 'not_html', message: string) {
    super(code, message);
  }
}

export interface UrlIngestDeps {
  db: Database;
  sink: Sink;
  debt: WalkDebt;
  store: StateStore;
  models: Models;
  aliases: AliasSnapshot;
  fetch: FetchPolicy;
  log: Logger;
}

/** One URL's life to its outcome, unchanged or changed, its rows in place; a failure is thrown. */
export async function ingestUrl(item: UrlItem, deps: UrlIngestDeps, slot?: ItemSlot): Promise<ItemOutcome> {
  const { opId, fullReprocess } = currentRunContext();
  const key = urlIdentity(item.url);
  const referenceItemId = referenceItemKey(item.url);
  const { memo: previous, healed } = await deps.store.getItem(key);
  if (healed) countEvent('memo_heal');
  const landed = previous === undefined || fullReprocess ? undefined : previous.sha256;
  const known = landed === undefined ? null : await validatorsOf(deps.store, key, landed);
  const page = await atStage('fetch', () => fetchIfChanged(item.url, deps.fetch, known));
  const unchanged = async (): Promise<ItemOutcome> => {
    await linkBack(item, referenceItemId, deps);
    return { path: item.url, kind: 'unchanged', landedReferenceId: referenceItemId };
  };
  // Not modified since the bytes the memo holds: those bytes, unchanged.
  if (page === null) return unchanged();
  const sha256 = sha256Hex(page.bytes);
  if (landed === sha256) {
    await rememberValidators(deps.store, key, sha256, page.validators, known);
    return unchanged();
  }

  const memos = new ItemMemos(deps.store);
  try {
    const { rows, owned } = await pageRows(item, page, sha256, referenceItemId, opId, deps, memos);
    const memo = {
      // A URL has no file stat: size is the body's, and the stat fields stay empty.
      sha256,
      size: page.bytes.length,
      mtimeNs: '0',
      ino: '0',
      // The item memo's owner field: for a URL, its reference item.
      sourceDocumentId: referenceItemId,
      mediaType: page.mediaType,
      opId,
      ...owned,
    };
    await commitItem(deps, memos, {
      key,
      rows,
      memo,
      previous,
      onRowsDurable: () => linkBack(item, referenceItemId, deps),
      slot,
    });
    await rememberValidators(deps.store, key, sha256, page.validators, null);
  } catch (error) {
    await memos.keepAnswered();
    throw error;
  }
  return { path: item.url, kind: 'changed', landedReferenceId: referenceItemId };
}

/** Where a URL's cache validators wait for its next fetch, with the sha256 of the bytes they name. */
const validatorsKey = (identity: string): string => `validators:${identity}`;

interface StoredValidators extends CacheValidators {
  sha256: string;
}

/** The validators of the bytes `sha256` (the ones whose rows landed), or null when none are known of them. */
async function validatorsOf(store: StateStore, identity: string, sha256: string): Promise<CacheValidators | null> {
  const stored = (await store.getMemo(validatorsKey(identity))) as StoredValidators | undefined;
  if (stored?.sha256 !== sha256 || (stored.etag === null && stored.lastModified === null)) return null;
  return { etag: stored.etag, lastModified: stored.lastModified };
}

/** Keeps the validators of the bytes `sha256`, once their rows are durable; no write when `known` already holds them. */
async function rememberValidators(
  store: StateStore,
  identity: string,
  sha256: string,
  validators: CacheValidators,
  known: CacheValidators | null,
): Promise<void> {
  if (validators.etag === null && validators.lastModified === null) return;
  if (known?.etag === validators.etag && known.lastModified === validators.lastModified) return;
  await store.putMemo(validatorsKey(identity), { sha256, ...validators } satisfies StoredValidators);
}

async function pageRows(
  item: UrlItem,
  page: FetchedPage,
  sha256: string,
  referenceItemId: string,
  opId: string,
  deps: UrlIngestDeps,
  memos: ItemMemos,
) {
  const cleaned = await atStage('clean', () => {
    const result = cleanHtml(decodeDeclared(page));
    if (result.verdict === 'empty' || result.verdict === 'not_html') {
      throw new UnusablePageError(
        result.verdict === 'empty' ? 'empty_page' : 'not_html',
        `the page holds no article text (${result.verdict})`,
      );
    }
    return result;
  });
  const chunks = await atStage('chunk', () => chunkText(cleaned.text));
  const { models } = deps;
  const extraction = await atStage('extract', () =>
    extractDocument(cleaned.text, extractDeps(models, memos), URL_EXTRACTORS),
  );
  const owner: RowOwner = { column: 'reference_item_id', id: referenceItemId };
  const chunkRows = chunkRowsOf(owner, chunks, opId);
  const { mentionRows } = await atStage('resolve', () => namedRowsOf(deps, owner, extraction, opId));
  const toEmbed = embeddingInputs({ chunks: chunkRows, mentions: mentionRows });
  const embeddingRows = await atStage('embed', () =>
    embedOwners(toEmbed, opId, { client: models.embedder, db: deps.db, queue: models.queue }),
  );
  const rows: ItemRows = new Map<TableSpec, Row[]>([
    [
      referenceItems,
      [
        {
          id: referenceItemId,
          url: item.url,
          title: cleaned.title ?? item.feedTitle,
          content_sha256: sha256,
          classification: extraction.classification,
          fetched_at: new Date().toISOString(),
          op_id: opId,
        },
      ],
    ],
    [contentChunks, chunkRows],
    [entityMentions, mentionRows],
    [recordEmbeddings, embeddingRows],
  ]);
  const keys = new OwnedKeys([...rows.keys()]);
  keys.add(rows, toEmbed);
  return { rows, owned: keys.owned };
}

/** The charset the response declared wins over a meta tag (as in browsers); else the cleaner sniffs the bytes. */
function decodeDeclared(page: FetchedPage): string | Uint8Array {
  if (page.charset === null) return page.bytes;
  try {
    return new TextDecoder(page.charset).decode(page.bytes);
  } catch {
    return page.bytes;
  }
}

/** The per-item backlink; a fault defers it to the reconciliation pass instead of failing the item. */
async function linkBack(item: UrlItem, referenceItemId: string, deps: UrlIngestDeps): Promise<void> {
  try {
    await linkFeedRows(deps.db, item.url, referenceItemId);
  } catch (error) {
    deps.log.info({ url: item.url, err: (error as Error).message }, 'backlink deferred to the reconciliation pass');
  }
}
