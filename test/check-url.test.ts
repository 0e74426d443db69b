// `ingest check-url` as operators run it: the real CLI in a child process, one JSON line per
// URL, and no connection made even to a URL it finds acceptable.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runIngest } from './helpers/cli.ts';
import { trapListener } from './helpers/loopback.ts';

const ingest = (args: string[], env: Record<string, string> = {}) =>
  runIngest(args, { INGEST_LOG_LEVEL: 'silent', ...env });

test('one JSON line per URL with the address judged and the named reason; exit 1 when any is refused', async () => {
  const urls = [
    'http://2130706433/',
    'http://[::ffff:169.254.169.254]/',
    'gopher://example/',
    'http://u:p@example/',
    'http://203.0.113.5/',
  ];
  const result = await ingest(['check-url', ...urls]);
  assert.is(result.status, 1, result.stderr);
  assert.equal(
    result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line)),
    [
      { url: urls[0], ok: false, address: '127.0.0.1', reason: 'loopback' },
      { url: urls[1], ok: false, address: '::ffff:a9fe:a9fe', reason: 'link_local' },
      { url: urls[2], ok: false, address: null, reason: 'unsupported_scheme' },
      { url: urls[3], ok: false, address: null, reason: 'credentials_in_url' },
      { url: urls[4], ok: false, address: '203.0.113.5', reason: 'documentation' },
    ],
  );
});

test('an allowed URL is reported ok and still not connected to', async () => {
  const trap = await trapListener('127.0.0.1');
  try {
    const result = await ingest(['check-url', `${trap.origin}/feed/1`], { INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32' });
    assert.is(result.status, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout), {
      url: `${trap.origin}/feed/1`,
      ok: true,
      address: '127.0.0.1',
      reason: null,
    });
    assert.is(trap.connections, 0);
  } finally {
    await trap.close();
  }
});

test('no URL is a usage error; a malformed allowlist names the variable', async () => {
  const none = await ingest(['check-url']);
  assert.is(none.status, 2);
  assert.match(none.stderr, /usage: ingest check-url URL/);
  const bad = await ingest(['check-url', 'http://example/'], { INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/33' });
  assert.is(bad.status, 2);
  assert.match(bad.stderr, /INGEST_FETCH_ALLOW_CIDRS must be a comma-separated list of CIDR ranges/);
});

test.run();
