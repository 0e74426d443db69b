// Stage 1, the source walk (docs/behaviour/stages.md#stage-1-source-walk): every file under
// ENGINE_SOURCE_PATH, recursively and live (lib/corpus/files.ts says how: byte names, links kept
// inside the corpus, dot-files and the service's own data directories skipped, unlisted directories
// reported), then every passed URL of the feed_articles ledger. One async iterable, read at the
// consumer's pace, so memory stays flat on any corpus or ledger size.
//
// The ledger is read in keyset pages of distinct URLs. Rows already linked are enumerated too:
// their item memo decides whether anything changed, and the cleanup pass must see every passed
// URL. A URL's identity is its text as the ledger stores it (reference_items.url, the ref:{url}
// key and the backlink all use it verbatim), so two spellings of one address are two items.

import { walkFiles, type FileItem, type WalkFilesOptions } from '../lib/corpus/files.ts';
import type { Queryable } from '../lib/db/database.ts';
import type { Logger } from '../lib/log.ts';

export interface UrlItem {
  url: string;
  /** The feed's title for the article, used when the page has none. */
  feedTitle: string | null;
}

export type SourceItem = { kind: 'file'; file: FileItem } | { kind: 'url'; url: UrlItem };

/**
 * The corpus's files, then the ledger's passed URLs (`feedUrls` false: the files only, for a walk
 * that reads what was saved). `files` says what to leave out and who hears of gaps.
 */
export async function* sourceItems(
  sourcePath: string,
  db: Queryable,
  log: Logger,
  files: WalkFilesOptions,
  feedUrls = true,
): AsyncGenerator<SourceItem> {
  for await (const file of walkFiles(sourcePath, log, files)) yield { kind: 'file', file };
  if (!feedUrls) return;
  for await (const url of passedUrls(db)) yield { kind: 'url', url };
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
