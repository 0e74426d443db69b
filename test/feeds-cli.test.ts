// @engine
// `ingest feeds add | list | pass | unpass` as an operator runs them, with real `ingest walk`s
// between: URLs added by the command are fetched from a real HTTP server on loopback (reached
// only through the fetch allowlist) and linked back; an unpassed URL's derived rows are
// retracted by the next walk and its ledger row stays; passed again, it is walked again. On
// PostgreSQL the ledger is the platform's, written only when the command is told so.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WalkSummary } from '../engine/walk/walk.ts';
import type { FeedRow } from '../lib/db/feed-ledger.ts';
import { runIngest } from './helpers/cli.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { serveHttp, type LoopbackServer } from './helpers/loopback.ts';

let root: string;
let corpus: string;
let server: LoopbackServer;
let target: TestDatabase | null = null;
let env: Record<string, string>;

const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><article><h1>${title}</h1>` +
  `<p>${`Ada Lovelace and Charles Babbage talk about ${title.toLowerCase()} at length. `.repeat(12)}</p>` +
  `<p>${'A second paragraph says what came of the talk and why it mattered later on. '.repeat(20)}</p></article></body></html>`;

test.before(async () => {
  server = await serveHttp((req, res) =>
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(`Article ${req.url}`)),
  );
  root = mkdtempSync(path.join(tmpdir(), 'ingest-feeds-cli-'));
  corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  await writeFile(path.join(corpus, 'notes.md'), '# Notes\n\nA file beside the feed.\n');
  env = {
    INGEST_DATA_DIR: path.join(root, 'data'),
    INGEST_LOG_LEVEL: 'error',
    INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32',
    INGEST_PRODUCER_AFTER_WALK: 'false',
  };
  await seedDataDir(env.INGEST_DATA_DIR!);
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    env.ENGINE_DB_DSN = target.dsn!;
  }
});
test.after(async () => {
  await server.close();
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const ingest = (args: string[]) => runIngest(args, env);
// On PostgreSQL a writing command needs the flag; embedded, it needs none.
const write = (args: string[]) => ingest(targetEngine === 'postgres' ? [...args, '--write-platform-ledger'] : args);

async function json<T>(args: string[]): Promise<T> {
  const result = await ingest([...args, '--json']);
  assert.is(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as T;
}

const walk = () => json<WalkSummary>(['walk', corpus]);
const ledger = async () =>
  (await json<FeedRow[]>(['feeds', 'list'])).map((r) => ({
    url: r.url.replace(server.origin, ''),
    passed: r.passed,
    linked: r.referenceItemId !== null,
  }));

test('URLs added, listed, walked, unpassed (rows retracted, ledger row kept) and passed again', async () => {
  const [one, two] = [`${server.origin}/a/1`, `${server.origin}/a/2`];
  const added = await write(['feeds', 'add', one, two]);
  assert.is(added.status, 0, added.stderr);
  assert.match(added.stdout, `added   ${one}`);
  assert.equal(await ledger(), [
    { url: '/a/1', passed: true, linked: false },
    { url: '/a/2', passed: true, linked: false },
  ]);
  const again = await write(['feeds', 'add', one]);
  assert.match(again.stdout, `listed  ${one} (already in the ledger, passed; left as it is)`);
  assert.is((await ledger()).length, 2, 'adding a listed URL adds no row');

  const first = await walk();
  assert.is(first.status, 'completed');
  assert.equal({ changed: first.items.changed, failed: first.items.failed }, { changed: 3, failed: 0 });
  assert.equal(await ledger(), [
    { url: '/a/1', passed: true, linked: true },
    { url: '/a/2', passed: true, linked: true },
  ]);

  const unpassed = await write(['feeds', 'unpass', one]);
  assert.is(unpassed.status, 0, unpassed.stderr);
  assert.match(unpassed.stdout, `unpassed ${one} (1 of 1 row changed)`);
  assert.equal(
    (await json<FeedRow[]>(['feeds', 'list', '--unpassed'])).map((r) => r.url),
    [one],
  );
  const second = await walk();
  assert.equal(
    { unchanged: second.items.unchanged, removed: second.items.removed, seen: second.items.seen },
    { unchanged: 2, removed: 1, seen: 2 },
    'the unpassed URL is retracted by the walk',
  );
  assert.equal(await ledger(), [
    { url: '/a/1', passed: false, linked: true },
    { url: '/a/2', passed: true, linked: true },
  ]);

  const passed = await write(['feeds', 'pass', one]);
  assert.match(passed.stdout, `passed   ${one} (1 of 1 row changed)`);
  const third = await walk();
  assert.equal({ changed: third.items.changed, unchanged: third.items.unchanged }, { changed: 1, unchanged: 2 });
});

test('pass or unpass of an URL not in the ledger changes nothing and exits 1; a malformed URL is a usage error', async () => {
  const listed = `${server.origin}/a/2`;
  const before = await ledger();
  const unknown = await write(['feeds', 'unpass', listed, `${server.origin}/never-added`]);
  assert.is(unknown.status, 1);
  assert.match(unknown.stderr, `not in the feed_articles ledger (nothing was changed): ${server.origin}/never-added`);
  assert.equal(await ledger(), before, 'the listed URL was not unpassed either');
  const malformed = await write(['feeds', 'add', 'example.com/page']);
  assert.is(malformed.status, 2);
  assert.match(malformed.stderr, 'not an absolute http(s) URL: example.com/page');
});

if (targetEngine === 'postgres') {
  test("on PostgreSQL the platform's ledger is written only with --write-platform-ledger, and the command says so", async () => {
    const url = `${server.origin}/a/3`;
    const refused = await ingest(['feeds', 'add', url]);
    assert.is(refused.status, 2);
    assert.match(refused.stderr, "feed_articles is the platform's ledger");
    assert.match(refused.stderr, '--write-platform-ledger');
    assert.not.ok((await ledger()).some((r) => r.url === '/a/3'));
    const written = await ingest(['feeds', 'add', url, '--write-platform-ledger']);
    assert.is(written.status, 0, written.stderr);
    assert.match(written.stderr, "writing to the platform's ledger feed_articles at postgresql://");
    assert.ok((await ledger()).some((r) => r.url === '/a/3'));
  });
}

test.run();
