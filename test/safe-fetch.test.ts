// The safe fetch's caps and named failures against real hostile servers on loopback (reached
// through the allowlist knob, as in tests only): slow-loris, an endless body, a 10 GB
// Content-Length, a gzip bomb, the wrong media type, redirect loops, bad encodings.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type http from 'node:http';
import { gzipSync } from 'node:zlib';
import { loadConfig } from '../lib/config.ts';
import { FetchError, safeFetch, type FetchPolicy } from '../lib/net/safe-fetch.ts';
import { hostile, serveHttp, type LoopbackServer } from './helpers/loopback.ts';

const HTML = '<html><head><title>T</title></head><body><p>Straße</p></body></html>';

/** Open requests the server still holds, so a test can see that the fetch hung up. */
const openRequests = new Set<http.IncomingMessage>();
const routes: Record<string, http.RequestListener> = {
  '/page': (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=UTF-8' }).end(HTML),
  '/gzip': (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync(HTML)),
  '/latin1': (_req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/xhtml+xml; charset="ISO-8859-1"' })
      .end(Buffer.from(HTML, 'latin1')),
  '/silent': () => {},
  '/trickle': hostile.trickle(20),
  '/endless': hostile.endless,
  '/huge': hostile.tenGigabytes,
  '/bomb': (_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' })
      .end(gzipSync(Buffer.alloc(64 * 1024 * 1024)));
  },
  '/pdf': (_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7'),
  '/untyped': (_req, res) => {
    res.removeHeader('content-type');
    res.end(HTML);
  },
  '/compress': (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'compress' }).end('x'),
  '/broken-gzip': (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(Buffer.from('not gzip at all')),
  '/missing': (_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('gone'),
  '/loop': (_req, res) => res.writeHead(302, { location: '/loop' }).end(),
  '/hop': (_req, res) => res.writeHead(301, { location: '/page' }).end(),
  '/nowhere': (_req, res) => res.writeHead(302).end(),
};

let server: LoopbackServer;
test.before(async () => {
  server = await serveHttp((req, res) => {
    openRequests.add(req);
    res.on('close', () => openRequests.delete(req));
    const route = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (route === undefined) res.writeHead(404).end();
    else route(req, res);
  });
});
test.after(async () => {
  await server.close();
});

const policy = (overrides: Partial<FetchPolicy> = {}): FetchPolicy => ({
  ...loadConfig(
    {
      INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32',
      INGEST_FETCH_MAX_BYTES: String(1024 * 1024),
      INGEST_FETCH_TIMEOUT_MS: '2000',
    },
    '/',
  ).fetch,
  ...overrides,
});

async function failure(path: string, p: FetchPolicy = policy()): Promise<FetchError> {
  try {
    await safeFetch(`${server.origin}${path}`, p);
  } catch (error) {
    if (error instanceof FetchError) return error;
    throw error;
  }
  throw new Error(`${path} was fetched`);
}

const hungUp = async () => {
  for (let i = 0; i < 100 && openRequests.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
  return openRequests.size === 0;
};

test('a page arrives with its media type, charset and the address it came from', async () => {
  const page = await safeFetch(`${server.origin}/page`, policy());
  assert.is(page.bytes.toString('utf8'), HTML);
  assert.is(page.mediaType, 'text/html');
  assert.is(page.charset, 'utf-8');
  assert.is(page.address, '127.0.0.1');
  assert.is(page.redirects, 0);
  const latin1 = await safeFetch(`${server.origin}/latin1`, policy());
  assert.is(latin1.charset, 'iso-8859-1');
  assert.is(latin1.mediaType, 'application/xhtml+xml');
});

test('a compressed page is inflated and a redirect is followed', async () => {
  assert.is((await safeFetch(`${server.origin}/gzip`, policy())).bytes.toString('utf8'), HTML);
  const moved = await safeFetch(`${server.origin}/hop`, policy());
  assert.is(moved.url, `${server.origin}/page`);
  assert.is(moved.redirects, 1);
});

test('without the allowlist the same loopback server is refused', async () => {
  const error = await failure('/page', policy({ allowCidrs: [] }));
  assert.is(error.code, 'url_refused');
  assert.is(error.reason, 'loopback');
});

test('slow-loris: a server that never answers, or trickles its body, ends as timeout', async () => {
  for (const path of ['/silent', '/trickle']) {
    const error = await failure(path, policy({ timeoutMs: 300 }));
    assert.is(error.code, 'timeout', path);
  }
  assert.ok(await hungUp(), 'the fetch hung up on the slow server');
});

test('an endless body is cut at the byte cap as too_large', async () => {
  const error = await failure('/endless');
  assert.is(error.code, 'too_large');
  assert.match(error.message, /passed the limit of 1048576 bytes/);
  assert.ok(await hungUp());
});

test('a 10 GB Content-Length is refused before the body is read', async () => {
  const error = await failure('/huge');
  assert.is(error.code, 'too_large');
  assert.match(error.message, /declares 10737418240 bytes/);
  assert.ok(await hungUp());
});

test('a gzip bomb counts at its inflated size', async () => {
  const error = await failure('/bomb');
  assert.is(error.code, 'too_large');
});

test('media types outside the list, and unknown or corrupt encodings, are named failures', async () => {
  assert.is((await failure('/pdf')).code, 'unsupported_content_type');
  assert.match((await failure('/untyped')).message, /\(none\)/);
  assert.is((await failure('/compress')).code, 'unsupported_content_encoding');
  assert.is((await failure('/broken-gzip')).code, 'corrupt_body');
});

test('HTTP errors, redirect loops and a redirect without a target are named failures', async () => {
  const missing = await failure('/missing');
  assert.is(missing.code, 'http_status');
  assert.is(missing.status, 404);
  assert.is((await failure('/loop')).code, 'too_many_redirects');
  assert.is((await failure('/hop', policy({ maxRedirects: 0 }))).code, 'too_many_redirects');
  assert.is((await failure('/nowhere')).code, 'http_status');
});

test('a refused connection is connection_failed', async () => {
  const closed = await serveHttp(() => {});
  const origin = closed.origin;
  await closed.close();
  try {
    await safeFetch(`${origin}/`, policy());
    assert.unreachable();
  } catch (error) {
    assert.instance(error, FetchError);
    assert.is((error as FetchError).code, 'connection_failed');
  }
});

test.run();
