// `ingest feeds add | list | pass | unpass`: the feed_articles ledger the walk takes its URLs
// from, written as the platform writes it (lib/db/feed-ledger.ts). Embedded, this service is
// the platform and the commands write freely. On PostgreSQL the ledger is the platform's table:
// the writing commands refuse unless told --write-platform-ledger, and then say where they wrote.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import {
  addFeedUrls,
  FeedUrlNotListedError,
  isFeedUrl,
  listFeedRows,
  setFeedPassed,
  type FeedRow,
} from '../lib/db/feed-ledger.ts';
import type { Logger } from '../lib/log.ts';
import { usageError } from './usage.ts';
import { withDatabase } from './with-database.ts';

interface Context {
  config: Config;
  log: Logger;
}

const LEDGER = ['feed_articles'];

/** Parses a writing command's URLs and runs `write` on the ledger once it may write there. */
async function writeLedger<T>(
  args: string[],
  config: Config,
  check: (url: string) => boolean,
  write: (db: Database, urls: string[]) => Promise<T>,
): Promise<T> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'write-platform-ledger': { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length === 0) throw usageError('give at least one URL');
  const bad = positionals.filter((url) => !check(url));
  if (bad.length > 0) throw usageError(`not an absolute http(s) URL: ${bad.join(', ')}`);
  const platform = config.database.dsn !== null;
  if (platform && !values['write-platform-ledger'])
    throw usageError(
      "on PostgreSQL feed_articles is the platform's ledger: this command writes to it only with --write-platform-ledger",
    );
  return withDatabase(
    config,
    async (db) => {
      if (platform) process.stderr.write(`ingest: writing to the platform's ledger feed_articles at ${db.location}\n`);
      return write(db, positionals);
    },
    { uses: LEDGER },
  );
}

export async function feedsAddCommand(args: string[], { config }: Context): Promise<number> {
  const added = await writeLedger(args, config, isFeedUrl, addFeedUrls);
  for (const a of added) {
    process.stdout.write(
      a.added
        ? `added   ${a.url} (passed: the next walk fetches it)\n`
        : `listed  ${a.url} (already in the ledger, ${a.passed ? 'passed' : 'not passed: `ingest feeds pass` it'}; left as it is)\n`,
    );
  }
  return 0;
}

async function setPassed(args: string[], config: Config, passed: boolean): Promise<number> {
  try {
    const changes = await writeLedger(
      args,
      config,
      () => true,
      (db, urls) => setFeedPassed(db, urls, passed),
    );
    const verb = passed ? 'passed  ' : 'unpassed';
    for (const c of changes) {
      process.stdout.write(`${verb} ${c.url} (${c.changed} of ${c.rows} ${c.rows === 1 ? 'row' : 'rows'} changed)\n`);
    }
    return 0;
  } catch (error) {
    if (!(error instanceof FeedUrlNotListedError)) throw error;
    process.stderr.write(`ingest: ${error.message}\n`);
    return 1;
  }
}

export const feedsPassCommand = (args: string[], { config }: Context): Promise<number> => setPassed(args, config, true);

export const feedsUnpassCommand = (args: string[], { config }: Context): Promise<number> =>
  setPassed(args, config, false);

const listLine = (row: FeedRow): string =>
  `${row.passed ? 'passed  ' : 'unpassed'}  ${row.referenceItemId === null ? 'unlinked' : 'linked  '}  ${row.url}` +
  `${row.title === null ? '' : `  ${row.title}`}\n`;

export async function feedsListCommand(args: string[], { config }: Context): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      passed: { type: 'boolean', default: false },
      unpassed: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  if (values.passed && values.unpassed) throw usageError('give --passed or --unpassed, not both');
  const filter = values.passed ? { passed: true } : values.unpassed ? { passed: false } : {};
  const rows = await withDatabase(config, (db) => listFeedRows(db, filter), { uses: LEDGER });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return 0;
  }
  process.stdout.write(rows.length === 0 ? 'no rows in the feed_articles ledger\n' : rows.map(listLine).join(''));
  return 0;
}
