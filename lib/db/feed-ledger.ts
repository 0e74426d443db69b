// The feed_articles ledger as the platform keeps it: one row per article a feed delivered, and
// `passed` set on the ones approved for ingestion (docs/behaviour/tables.md#feed_articles). The
// walk reads the passed URLs (stages/source.ts) and links each row to its reference item
// (stages/backlink.ts); an URL no longer passed has its derived rows retracted by the cleanup pass.
// These are the writes an operator makes where no platform does (embedded mode): rows are added or
// have `passed` changed, never deleted, so the walk's rules apply to them as to the platform's.

import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from './database.ts';
import { IngestError } from '../errors.ts';

export interface FeedRow {
  id: string;
  url: string;
  title: string | null;
  passed: boolean;
  referenceItemId: string | null;
  linkedAt: string | null;
  createdAt: string;
}

export class FeedUrlNotListedError extends IngestError {
  readonly urls: readonly string[];
  constructor(urls: readonly string[]) {
    super(
      'feed_url_not_listed',
      `not in the feed_articles ledger (nothing was changed): ${urls.join(', ')}; add them with \`ingest feeds add\``,
    );
    this.urls = urls;
  }
}

/** An URL the ledger may hold: absolute http(s). Its text is stored as given: the walk uses it verbatim. */
export function isFeedUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const { protocol } = new URL(text);
  return protocol === 'http:' || protocol === 'https:';
}

export interface Added {
  url: string;
  /** False when the ledger already held the URL: its rows are left as they are. */
  added: boolean;
  /** Whether the walk takes it: a new row is passed; an existing URL counts when any of its rows is. */
  passed: boolean;
}

/** Adds a passed row for each URL the ledger does not hold yet. */
export function addFeedUrls(db: Pick<Database, 'transaction'>, urls: readonly string[]): Promise<Added[]> {
  return db.transaction(async (tx) => {
    const out: Added[] = [];
    for (const url of new Set(urls)) {
      const { rows } = await tx.query<{ passed: boolean }>(
        'SELECT bool_or(passed) AS passed FROM feed_articles WHERE url = $1::text HAVING count(*) > 0',
        [url],
      );
      if (rows.length > 0) {
        out.push({ url, added: false, passed: rows[0]!.passed });
        continue;
      }
      await tx.query('INSERT INTO feed_articles (id, url, passed) VALUES ($1::uuid, $2::text, true)', [
        randomUUID(),
        url,
      ]);
      out.push({ url, added: true, passed: true });
    }
    return out;
  });
}

export interface PassChange {
  url: string;
  /** The URL's rows in the ledger. */
  rows: number;
  /** Those whose `passed` this call changed. */
  changed: number;
}

/**
 * Sets `passed` on every row of each URL. All or nothing: when any URL is not in the ledger,
 * nothing changes and FeedUrlNotListedError names them.
 */
export function setFeedPassed(
  db: Pick<Database, 'transaction'>,
  urls: readonly string[],
  passed: boolean,
): Promise<PassChange[]> {
  return db.transaction(async (tx) => {
    const out: PassChange[] = [];
    for (const url of new Set(urls)) {
      const { rows } = await tx.query<{ rows: number; changed: number }>(
        `WITH target AS (SELECT id, passed FROM feed_articles WHERE url = $1::text FOR UPDATE),
              changed AS (UPDATE feed_articles f SET passed = $2::boolean FROM target t
                           WHERE f.id = t.id AND t.passed <> $2::boolean RETURNING f.id)
         SELECT (SELECT count(*) FROM target)::int AS rows, (SELECT count(*) FROM changed)::int AS changed`,
        [url, passed],
      );
      out.push({ url, ...rows[0]! });
    }
    const unknown = out.filter((c) => c.rows === 0).map((c) => c.url);
    if (unknown.length > 0) throw new FeedUrlNotListedError(unknown);
    return out;
  });
}

/** The ledger's rows by URL, then age; `passed` keeps only the rows with that value. */
export async function listFeedRows(db: Queryable, filter: { passed?: boolean } = {}): Promise<FeedRow[]> {
  const { rows } = await db.query<{
    id: string;
    url: string;
    title: string | null;
    passed: boolean;
    reference_item_id: string | null;
    linked_at: Date | string | null;
    created_at: Date | string;
  }>(
    `SELECT id::text, url, title, passed, reference_item_id::text, linked_at, created_at FROM feed_articles
      WHERE $1::boolean IS NULL OR passed = $1::boolean ORDER BY url, created_at, id`,
    [filter.passed ?? null],
  );
  const iso = (value: Date | string) => new Date(value).toISOString();
  return rows.map((r) => ({
    id: r.id,
    url: r.url,
    title: r.title,
    passed: r.passed,
    referenceItemId: r.reference_item_id,
    linkedAt: r.linked_at === null ? null : iso(r.linked_at),
    createdAt: iso(r.created_at),
  }));
}
