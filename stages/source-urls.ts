// Stage 1, the second source (SPEC.md 1): the passed-URL ledger. Every distinct URL of a
// feed_articles row with passed = true, as an async iterable read in keyset pages, so memory
// stays flat on any ledger size. Rows already linked are enumerated too: their item memo
// decides whether anything changed, and the cleanup pass must see every passed URL.
//
// A URL's identity is its text as the ledger stores it (reference_items.url, the ref:{url}
// key and the backlink all use it verbatim), so two spellings of one address are two items.

import type { Queryable } from '../lib/db/database.ts';

export interface UrlItem {
  url: string;
  /** The feed's title for the article, used when the page has none. */
  feedTitle: string | null;
}

const PAGE_ROWS = 500;

export async function* passedUrls(db: Queryable, pageRows = PAGE_ROWS): AsyncGenerator<UrlItem> {
  let after: string | null = null;
  for (;;) {
    const { rows }: { rows: { url: string; title: string | null }[] } = await db.query(
      `SELECT url, max(title) AS title FROM feed_articles
        WHERE passed AND ($1::text IS NULL OR url > $1::text)
        GROUP BY url ORDER BY url LIMIT $2::integer`,
      [after, pageRows],
    );
    for (const row of rows) yield { url: row.url, feedTitle: row.title };
    if (rows.length < pageRows) return;
    after = rows[rows.length - 1]!.url;
  }
}
