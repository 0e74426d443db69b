// @engine
// The URL source end to end (issue 8 acceptance): passed feed_articles rows fetched through
// the safe fetch from a real HTTP server on loopback (reached only through the allowlist
// knob), cleaned, extracted (classification, entities), chunked, embedded, upserted into
// reference_items and linked back; the reconciliation pass; fetch caps failing one item each.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { pino } from 'pino';
import type { Database } from '../lib/db/database.ts';
import type { Lifespan } from '../engine/lifespan.ts';
import { walk, type WalkSummary } from '../engine/walk/walk.ts';
import { referenceItemKey } from '../lib/ids.ts';
import { hostile, serveHttp, watchConnectionAttempts, type LoopbackServer } from './helpers/loopback.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

const article = (title: string, names: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><nav>Home | News</nav><article><h1>${title}</h1>` +
  `<p>${names} met in London to talk about the engine. ${'The meeting went on for hours and covered the design in detail. '.repeat(8)}</p>` +
  `<p>${'A second paragraph adds context on what followed the meeting and why it mattered. '.repeat(30)}</p></article></body></html>`;

/** What the loopback server answers per path; tests change it between walks. */
let pages: Record<string, http.RequestListener>;
const html =
  (body: string): http.RequestListener =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
const requests: string[] = [];

let server: LoopbackServer;
let f: WalkFixture;
let logLines: Record<string, unknown>[];

test.before(async () => {
  server = await serveHttp((req, res) => {
    requests.push(req.url ?? '');
    const page = pages[req.url ?? ''];
    if (page === undefined) res.writeHead(404, { 'content-type': 'text/html' }).end('not found');
    else page(req, res);
  });
});
test.after(async () => {
  await server.close();
});
test.before.each(async () => {
  pages = {
    '/a/1': html(article('Analytical engines', 'Ada Lovelace and Charles Babbage')),
    '/a/2': html(article('Difference engines', 'Charles Babbage and Mary Somerville')),
    '/a/3': html(article('Never to be fetched', 'Grace Hopper')),
    '/a/4': html(article('Already linked', 'Alan Turing')),
    '/a/5': html(article('Linked elsewhere', 'Joan Clarke')),
  };
  requests.length = 0;
  logLines = [];
  f = await walkFixture({
    env: {
      INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32',
      INGEST_FETCH_TIMEOUT_MS: '1500',
      INGEST_FETCH_MAX_BYTES: String(256 * 1024),
    },
  });
});
test.after.each(async () => {
  await f.dispose();
});

const url = (path: string) => `${server.origin}${path}`;

async function feedRow(path: string, passed: boolean, referenceItemId: string | null = null): Promise<string> {
  const id = randomUUID();
  await f.target.db.query(
    `INSERT INTO feed_articles (id, url, title, passed, reference_item_id, linked_at)
     VALUES ($1::uuid, $2, $3, $4::boolean, $5::uuid, CASE WHEN $5::uuid IS NULL THEN NULL ELSE now() END)`,
    [id, url(path), `Feed title of ${path}`, passed, referenceItemId],
  );
  return id;
}

async function links(): Promise<
  Map<string, { url: string; passed: boolean; ref: string | null; linkedAt: string | null }>
> {
  const { rows } = await f.target.db.query<{
    id: string;
    url: string;
    passed: boolean;
    ref: string | null;
    linked_at: Date | string | null;
  }>('SELECT id::text, url, passed, reference_item_id::text AS ref, linked_at FROM feed_articles');
  return new Map(
    rows.map((r) => [
      r.id,
      {
        url: r.url,
        passed: r.passed,
        ref: r.ref,
        linkedAt: r.linked_at === null ? null : new Date(r.linked_at).toISOString(),
      },
    ]),
  );
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await f.target.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params);
  return rows[0]!.n;
}

/** The fixture's engine with a capturing logger (and, for fault tests, a wrapped database). */
function engine(db: Database = f.target.db): Lifespan {
  const log = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) });
  return { ...f.lifespan, db, log };
}

const run = (e: Lifespan = engine()): Promise<WalkSummary> => walk(e, { sourcePath: f.corpus });

test('a walk over passed, unpassed and already-linked rows ingests and links exactly the passed ones', async () => {
  const linked = await feedRow('/a/4', true);
  const first = await run();
  assert.equal(first.items, { seen: 1, changed: 1, unchanged: 0, failed: 0, dropped: 0, skipped: 0, removed: 0 });
  const ref4 = referenceItemKey(url('/a/4'));
  const linkedBefore = (await links()).get(linked)!;
  assert.is(linkedBefore.ref, ref4);

  const a = await feedRow('/a/1', true);
  const b1 = await feedRow('/a/2', true);
  const b2 = await feedRow('/a/2', true);
  const unpassed = await feedRow('/a/3', false);
  const elsewhere = await feedRow('/a/5', true, ref4);
  requests.length = 0;
  const second = await run();

  assert.is(second.status, 'completed');
  assert.equal(second.items, { seen: 4, changed: 3, unchanged: 1, failed: 0, dropped: 0, skipped: 0, removed: 0 });
  assert.equal(
    requests.sort(),
    ['/a/1', '/a/2', '/a/4', '/a/5'],
    'the unpassed URL is never fetched; a URL shared by two rows once',
  );
  const after = await links();
  assert.is(after.get(a)!.ref, referenceItemKey(url('/a/1')));
  assert.is(after.get(b1)!.ref, referenceItemKey(url('/a/2')));
  assert.is(after.get(b2)!.ref, referenceItemKey(url('/a/2')));
  assert.ok(after.get(a)!.linkedAt !== null);
  assert.equal(after.get(unpassed), { url: url('/a/3'), passed: false, ref: null, linkedAt: null });
  assert.equal(after.get(linked), linkedBefore, 'an already-linked row is left exactly as it was');
  assert.is(after.get(elsewhere)!.ref, ref4, 'a row linked elsewhere is never re-pointed');

  const { rows: items } = await f.target.db.query<{
    id: string;
    url: string;
    title: string;
    op_id: string;
    classification: { label: string } | null;
  }>('SELECT id::text, url, title, op_id::text, classification FROM reference_items ORDER BY url');
  assert.equal(
    items.map((r) => r.url),
    ['/a/1', '/a/2', '/a/4', '/a/5'].map(url),
  );
  for (const item of items) {
    assert.is(item.id, referenceItemKey(item.url));
    assert.is(item.op_id, item.url === url('/a/4') ? first.opId : second.opId, item.url);
    assert.ok(item.classification !== null && typeof item.classification.label === 'string', 'classified');
    assert.is(
      (await count('content_chunks WHERE reference_item_id = $1::uuid AND source_document_id IS NULL', [item.id])) > 1,
      true,
      'chunked',
    );
    assert.ok(
      (await count('entity_mentions WHERE reference_item_id = $1::uuid', [item.id])) >= 1,
      'entities extracted',
    );
  }
  assert.is(items[0]!.title, 'Analytical engines');
  const { rows: names } = await f.target.db.query<{ canonical_name: string }>(
    'SELECT canonical_name FROM entity_mentions WHERE reference_item_id = $1::uuid ORDER BY 1',
    [items[0]!.id],
  );
  assert.ok(
    names.some((n) => n.canonical_name === 'Ada Lovelace'),
    JSON.stringify(names),
  );
  const unembedded = await count(`content_chunks c WHERE c.reference_item_id IS NOT NULL AND NOT EXISTS
    (SELECT 1 FROM record_embeddings e WHERE e.owner_kind = 'content_chunk' AND e.owner_id = c.id)`);
  assert.is(unembedded, 0, 'every chunk embedded');
  assert.ok(
    (await count(
      `record_embeddings e JOIN entity_mentions m ON e.owner_kind = 'entity_mention' AND e.owner_id = m.id WHERE m.reference_item_id IS NOT NULL`,
    )) >= 4,
  );
  assert.is(await count('q_a_extractions'), 0, 'feed articles get no Q&A extraction');
  assert.equal(
    logLines.filter((l) => l.msg === 'url_backlink_reconciled').map((l) => l.linked_count),
    [0, 0],
    'every row was linked per item',
  );
});

test('a second walk over unchanged pages changes nothing; a changed page is re-ingested alone', async () => {
  await feedRow('/a/1', true);
  await feedRow('/a/2', true);
  const first = await run();
  const chunkKeys = async (path: string) =>
    (
      await f.target.db.query<{ id: string; op_id: string }>(
        'SELECT id::text, op_id::text FROM content_chunks WHERE reference_item_id = $1::uuid ORDER BY id',
        [referenceItemKey(url(path))],
      )
    ).rows;
  const before1 = await chunkKeys('/a/1');
  const before2 = await chunkKeys('/a/2');

  const second = await run();
  assert.equal(second.items, { seen: 2, changed: 0, unchanged: 2, failed: 0, dropped: 0, skipped: 0, removed: 0 });
  assert.equal(second.rows, {});
  assert.equal(await chunkKeys('/a/1'), before1);

  pages['/a/1'] = html(
    '<html><head><title>Short now</title></head><body><p>Ada Lovelace wrote a short note, and that is all that is left of this article now.</p></body></html>',
  );
  const third = await run();
  assert.equal(third.items, { seen: 2, changed: 1, unchanged: 1, failed: 0, dropped: 0, skipped: 0, removed: 0 });
  const after1 = await chunkKeys('/a/1');
  assert.is(after1.length, 1, 'the chunks the page no longer has are deleted');
  assert.is(after1[0]!.op_id, third.opId);
  assert.equal(await chunkKeys('/a/2'), before2);
  assert.ok(before2.every((c) => c.op_id === first.opId));
  const {
    rows: [item],
  } = await f.target.db.query<{ title: string }>('SELECT title FROM reference_items WHERE id = $1::uuid', [
    referenceItemKey(url('/a/1')),
  ]);
  assert.is(item!.title, 'Short now');
});

test("a walk sends a page's validators back: an unchanged page costs a 304 and changes nothing", async () => {
  const LAST_MODIFIED = 'Wed, 21 Oct 2015 07:28:00 GMT';
  let version = 1;
  /** The validators each request sent: [If-None-Match, If-Modified-Since]. */
  const sent: Record<string, (string | undefined)[][]> = { '/e/1': [], '/e/2': [] };
  const validated = (path: string, answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) => {
    pages[path] = (req, res) => {
      sent[path]!.push([req.headers['if-none-match'], req.headers['if-modified-since']]);
      answer(req, res);
    };
  };
  // One page names its version by an entity tag, the other by a modification date.
  validated('/e/1', (req, res) => {
    const etag = `"v${version}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag })
      .end(article(`Version ${version}`, 'Ada Lovelace and Charles Babbage'));
  });
  validated('/e/2', (req, res) => {
    if (req.headers['if-modified-since'] === LAST_MODIFIED) return void res.writeHead(304).end();
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'last-modified': LAST_MODIFIED })
      .end(article('Dated', 'Mary Somerville'));
  });
  await feedRow('/e/1', true);
  await feedRow('/e/2', true);
  assert.is((await run()).items.changed, 2);
  const second = await run();
  assert.equal(second.items, { seen: 2, changed: 0, unchanged: 2, failed: 0, dropped: 0, skipped: 0, removed: 0 });
  assert.equal(second.rows, {});
  assert.equal(sent['/e/1'], [
    [undefined, undefined],
    ['"v1"', undefined],
  ]);
  assert.equal(sent['/e/2'], [
    [undefined, undefined],
    [undefined, LAST_MODIFIED],
  ]);

  version = 2;
  const third = await run();
  assert.is(third.items.changed, 1, 'a new version is fetched whole and walked');
  const chunks = await f.target.db.query<{ op_id: string }>(
    'SELECT DISTINCT op_id::text FROM content_chunks WHERE reference_item_id = $1::uuid',
    [referenceItemKey(url('/e/1'))],
  );
  assert.equal(
    chunks.rows.map((r) => r.op_id),
    [third.opId],
  );
  await run();
  assert.equal(sent['/e/1']!.slice(2), [
    ['"v1"', undefined],
    ['"v2"', undefined],
  ]);
  // A full reprocess reads every page whole: it sends nothing back.
  await walk(engine(), { sourcePath: f.corpus, fullReprocess: true });
  assert.equal(sent['/e/1']!.at(-1), [undefined, undefined]);
  assert.equal(sent['/e/2']!.at(-1), [undefined, undefined]);
});

test('the reconciliation pass links the rows whose per-item backlink was deferred', async () => {
  const rows = [await feedRow('/a/1', true), await feedRow('/a/2', true), await feedRow('/a/2', true)];
  // The first-walk race, made certain: the per-item backlink names a reference item that is
  // not visible, so the real database refuses it (a foreign key violation) and it defers.
  let deferred = 0;
  const racing: Database = {
    ...f.target.db,
    query: (sql, params) => {
      if (/UPDATE feed_articles SET/.test(sql)) {
        deferred += 1;
        return f.target.db.query(sql, [params![0], randomUUID()]);
      }
      return f.target.db.query(sql, params);
    },
  };
  const summary = await run(engine(racing));
  assert.is(summary.status, 'completed');
  assert.is(summary.items.failed, 0, 'a deferred backlink is not an item failure');
  assert.is(deferred, 2);
  const after = await links();
  for (const id of rows) assert.is(after.get(id)!.ref, referenceItemKey(after.get(id)!.url));
  assert.equal(
    logLines.filter((l) => l.msg === 'url_backlink_reconciled').map((l) => l.linked_count),
    [3],
  );
  assert.equal(logLines.filter((l) => l.msg === 'backlink deferred to the reconciliation pass').length, 2);
});

test('a failing reconciliation pass is logged and the walk stands; the next walk links the rows', async () => {
  const id = await feedRow('/a/1', true);
  const broken: Database = {
    ...f.target.db,
    query: (sql, params) =>
      /UPDATE feed_articles/.test(sql)
        ? Promise.reject(new Error('feed_articles is locked'))
        : f.target.db.query(sql, params),
  };
  const summary = await run(engine(broken));
  assert.is(summary.status, 'completed');
  const { durationMs, ...backlink } = summary.passes.find((p) => p.name === 'url_backlink')!;
  assert.equal(backlink, { name: 'url_backlink', ok: false, error: 'feed_articles is locked' });
  assert.ok(durationMs >= 0, 'a failed pass is timed too');
  assert.ok(summary.passes.find((p) => p.name === 'cleanup')!.ok, 'the passes after it still run');
  assert.is(summary.items.changed, 1);
  assert.is((await links()).get(id)!.ref, null);

  const next = await run();
  assert.is(next.items.unchanged, 1);
  assert.is((await links()).get(id)!.ref, referenceItemKey(url('/a/1')), 'an unchanged item still links its rows');
});

test('fetch caps and refusals end one item each with a named error; the rest of the walk lands', async () => {
  pages['/slow'] = hostile.trickle(50);
  pages['/endless'] = hostile.endless;
  pages['/huge'] = hostile.tenGigabytes;
  pages['/blank'] = html('<html><body><script>var x = 1;</script></body></html>');
  pages['/image'] = (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end('png');
  for (const path of ['/a/1', '/slow', '/endless', '/huge', '/blank', '/image', '/missing']) await feedRow(path, true);
  await f.target.db.query(
    `INSERT INTO feed_articles (id, url, passed) VALUES ($1::uuid, 'http://169.254.169.254/latest/meta-data/', true)`,
    [randomUUID()],
  );

  const watch = watchConnectionAttempts();
  const summary = await run().finally(() => watch.stop());
  assert.equal(
    watch.attempts.filter((a) => !a.startsWith('127.0.0.1:')),
    [],
    'only the loopback server was dialled',
  );
  assert.is(summary.status, 'completed');
  assert.equal({ changed: summary.items.changed, failed: summary.items.failed }, { changed: 1, failed: 7 });
  const byPath = Object.fromEntries(
    summary.failures.map((x) => [x.path.replace(server.origin, ''), `${x.stage}:${x.code}`]),
  );
  assert.equal(byPath, {
    '/slow': 'fetch:timeout',
    '/endless': 'fetch:too_large',
    '/huge': 'fetch:too_large',
    '/blank': 'clean:empty_page',
    '/image': 'fetch:unsupported_content_type',
    '/missing': 'fetch:http_status',
    'http://169.254.169.254/latest/meta-data/': 'fetch:url_refused',
  });
  assert.is(summary.counters.item_failure, 7);
  assert.equal(
    (await f.target.db.query<{ url: string }>('SELECT url FROM reference_items')).rows.map((r) => r.url),
    [url('/a/1')],
  );
});

test('cleanup keeps the rows of still-passed URLs, even unreachable ones, and retracts an unpassed URL', async () => {
  const one = await feedRow('/a/1', true);
  await feedRow('/a/2', true);
  await feedRow('/a/4', true);
  await f.write('notes.md', '# Notes\n\nA file beside the feed.\n');
  await run();
  const ref1 = referenceItemKey(url('/a/1'));
  const ref2 = referenceItemKey(url('/a/2'));
  const ref4 = referenceItemKey(url('/a/4'));
  const derived = (ref: string) => count(`content_chunks WHERE reference_item_id = $1::uuid`, [ref]);
  const chunks2 = await derived(ref2);
  assert.ok(chunks2 > 0);

  await f.target.db.query('UPDATE feed_articles SET passed = false WHERE id = $1::uuid', [one]);
  delete pages['/a/2']; // still passed, but now answering 404
  const summary = await run();
  assert.is(summary.status, 'completed');
  assert.equal(
    { unchanged: summary.items.unchanged, failed: summary.items.failed, removed: summary.items.removed },
    { unchanged: 2, failed: 1, removed: 1 },
  );
  assert.is(await derived(ref1), 0, 'an unpassed URL loses its derived rows');
  assert.is(await count(`entity_mentions WHERE reference_item_id = $1::uuid`, [ref1]), 0);
  assert.is(await count('reference_items WHERE id = $1::uuid', [ref1]), 1, 'its reference item stays as provenance');
  assert.is(await derived(ref2), chunks2, 'a passed URL that failed to fetch keeps its rows');
  assert.ok((await derived(ref4)) > 0);
  assert.is((await f.lifespan.store.getItem(`url:${url('/a/1')}`)).memo, undefined);
  assert.ok((await f.lifespan.store.getItem(`url:${url('/a/2')}`)).memo !== undefined);
  assert.is(await count('source_documents'), 1);
});

test.run();
