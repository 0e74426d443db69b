// The SSRF suite (issue 8 acceptance): hostile URLs, each refused by the safe fetch with a
// named reason before any socket is opened. Loopback targets point at a trap listener that
// must see no connection; every other target is proven untouched by watching every
// connection attempt this process makes. DNS is a modelled resolver: no real lookup happens,
// and the only addresses ever dialled are loopback ones.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { loadConfig } from '../lib/config.ts';
import { FetchError, safeFetch, type FetchPolicy } from '../lib/net/safe-fetch.ts';
import { validateUrl, type ResolvedAddress, type Resolver } from '../lib/net/validate-url.ts';
import {
  serveHttp,
  trapListener,
  watchConnectionAttempts,
  type LoopbackServer,
  type Trap,
} from './helpers/loopback.ts';

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

/** The modelled DNS. PUBLIC stands for an ordinary internet address; it is never dialled. */
const PUBLIC = '93.184.216.34';
const ZONE: Record<string, ResolvedAddress[]> = {
  localhost: [v4('127.0.0.1')],
  'localtest.me': [v4('127.0.0.1')],
  '127.0.0.1.nip.io': [v4('127.0.0.1')],
  'metadata.google.internal': [v4('169.254.169.254')],
  'intranet.example': [v4('10.1.2.3')],
  'mixed.example': [v4(PUBLIC), v4('10.0.0.1')],
  'mixed-v6.example': [v4(PUBLIC), v6('::1')],
  'mapped.example': [v6('::ffff:127.0.0.1')],
  'nat64.example': [v6('64:ff9b::a9fe:a9fe')],
  'empty.example': [],
};
const modelledDns: Resolver = async (hostname) => {
  const answer = ZONE[hostname];
  if (answer === undefined) throw Object.assign(new Error(`queryA ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return answer;
};

let trap: Trap;
let trap6: Trap;
test.before(async () => {
  trap = await trapListener('127.0.0.1');
  trap6 = await trapListener('::1', trap.port);
});
test.after(async () => {
  await trap.close();
  await trap6.close();
});

/** [url, reason]; {P} is the trap's port, so a leak to loopback would land in the trap. */
const HOSTILE: readonly [string, string][] = [
  // Every refused IPv4 range, cloud metadata endpoints included.
  ['http://127.0.0.1:{P}/', 'loopback'],
  ['http://127.255.255.254:{P}/', 'loopback'],
  ['http://10.0.0.1/', 'private'],
  ['http://172.16.0.1/', 'private'],
  ['http://172.31.255.255/', 'private'],
  ['http://192.168.1.1/admin', 'private'],
  ['http://169.254.169.254/latest/meta-data/iam/security-credentials/', 'link_local'],
  ['http://169.254.170.2/v2/credentials', 'link_local'],
  ['http://100.100.100.200/latest/meta-data/', 'carrier_grade_nat'],
  ['http://100.64.0.1/', 'carrier_grade_nat'],
  ['http://224.0.0.1/', 'multicast'],
  ['http://239.255.255.250:1900/', 'multicast'],
  ['http://255.255.255.255/', 'broadcast'],
  ['http://0.0.0.0:{P}/', 'unspecified'],
  ['http://0.1.2.3/', 'unspecified'],
  ['http://240.0.0.1/', 'reserved'],
  ['http://192.0.0.8/', 'reserved'],
  ['http://192.88.99.1/', 'reserved'],
  ['http://192.0.2.1/', 'documentation'],
  ['http://198.51.100.7/', 'documentation'],
  ['http://203.0.113.9/', 'documentation'],
  ['http://198.18.0.1/', 'benchmarking'],
  // Odd spellings of IPv4, judged after the URL parser normalises them.
  ['http://2130706433:{P}/', 'loopback'],
  ['http://0x7f000001:{P}/', 'loopback'],
  ['http://017700000001:{P}/', 'loopback'],
  ['http://0177.0.0.1:{P}/', 'loopback'],
  ['http://0x7f.0x0.0x0.0x1:{P}/', 'loopback'],
  ['http://127.1:{P}/', 'loopback'],
  ['http://127.0.1:{P}/', 'loopback'],
  ['http://127.0.0.1.:{P}/', 'loopback'],
  ['http://%31%32%37.0.0.1:{P}/', 'loopback'],
  ['http://１２７.０.０.１:{P}/', 'loopback'],
  ['http://0:{P}/', 'unspecified'],
  ['http://2852039166/latest/meta-data/', 'link_local'],
  ['http://0xA9FEA9FE/latest/meta-data/', 'link_local'],
  ['http://0251.0376.0251.0376/', 'link_local'],
  ['http://167772161/', 'private'],
  ['http://0x0a.0.0.1/', 'private'],
  // IPv6 ranges and the IPv6 forms that embed an IPv4 address.
  ['http://[::1]:{P}/', 'loopback'],
  ['http://[0:0:0:0:0:0:0:1]:{P}/', 'loopback'],
  ['http://[::]:{P}/', 'unspecified'],
  ['http://[::ffff:127.0.0.1]:{P}/', 'loopback'],
  ['http://[::ffff:7f00:1]:{P}/', 'loopback'],
  ['http://[::ffff:169.254.169.254]/', 'link_local'],
  ['http://[::ffff:10.0.0.1]/', 'private'],
  ['http://[::127.0.0.1]:{P}/', 'ipv4_compatible'],
  ['http://[::10.0.0.1]/', 'ipv4_compatible'],
  ['http://[::ffff:0:7f00:1]/', 'ipv4_translated'],
  ['http://[64:ff9b::127.0.0.1]/', 'nat64'],
  ['http://[64:ff9b::a9fe:a9fe]/', 'nat64'],
  ['http://[64:ff9b:1::a00:1]/', 'nat64'],
  ['http://[2002:7f00:1::]/', '6to4'],
  ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'teredo'],
  ['http://[fe80::1]/', 'link_local'],
  ['http://[fd00:ec2::254]/latest/meta-data/', 'unique_local'],
  ['http://[fc00::1]/', 'unique_local'],
  ['http://[fec0::1]/', 'site_local'],
  ['http://[ff02::1]/', 'multicast'],
  ['http://[2001:db8::1]/', 'documentation'],
  ['http://[100::1]/', 'discard'],
  ['http://[4000::1]/', 'reserved'],
  // user@host confusion and other parser tricks.
  ['http://public.example@127.0.0.1:{P}/', 'credentials_in_url'],
  ['http://user:secret@public.example/', 'credentials_in_url'],
  ['http://127.0.0.1:{P}\\@public.example/', 'loopback'],
  ['http://127.0.0.1:{P}#@public.example/', 'loopback'],
  ['http://[::1/', 'invalid_url'],
  ['http://', 'invalid_url'],
  // Schemes other than http and https.
  ['file:///etc/passwd', 'unsupported_scheme'],
  ['gopher://127.0.0.1:{P}/_GET%20/', 'unsupported_scheme'],
  ['ftp://127.0.0.1:{P}/', 'unsupported_scheme'],
  ['dict://127.0.0.1:11211/stats', 'unsupported_scheme'],
  ['ws://127.0.0.1:{P}/', 'unsupported_scheme'],
  ['data:text/html,<h1>x</h1>', 'unsupported_scheme'],
  // Names whose DNS answers are forbidden, in part or whole.
  ['http://localhost:{P}/', 'loopback'],
  ['http://LOCALHOST:{P}/', 'loopback'],
  ['http://localtest.me:{P}/', 'loopback'],
  ['http://127.0.0.1.nip.io:{P}/', 'loopback'],
  ['http://metadata.google.internal/computeMetadata/v1/', 'link_local'],
  ['http://intranet.example/', 'private'],
  ['http://mixed.example/', 'private'],
  ['http://mixed-v6.example:{P}/', 'loopback'],
  ['http://mapped.example:{P}/', 'loopback'],
  ['http://nat64.example/', 'nat64'],
  ['http://no-such-name.example/', 'dns_failed'],
  ['http://empty.example/', 'no_address'],
];

const productionPolicy = (): FetchPolicy => loadConfig({}, '/').fetch;

async function refusal(run: () => Promise<unknown>): Promise<FetchError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof FetchError) return error;
    throw error;
  }
  throw new Error('the fetch was not refused');
}

test(`the table holds at least 60 hostile URLs and every reason appears`, () => {
  assert.ok(HOSTILE.length >= 60, `${HOSTILE.length} rows`);
  for (const reason of [
    'loopback',
    'private',
    'link_local',
    'carrier_grade_nat',
    'multicast',
    'broadcast',
    'reserved',
    'unspecified',
    'documentation',
    'unique_local',
    'ipv4_compatible',
    'nat64',
    'credentials_in_url',
    'unsupported_scheme',
    'dns_failed',
  ]) {
    assert.ok(
      HOSTILE.some(([, r]) => r === reason),
      reason,
    );
  }
});

test('every hostile URL is refused with its named reason, and no connection is attempted', async () => {
  const watch = watchConnectionAttempts();
  try {
    for (const [template, reason] of HOSTILE) {
      const url = template.replaceAll('{P}', String(trap.port));
      const error = await refusal(() => safeFetch(url, productionPolicy(), { resolve: modelledDns }));
      assert.is(error.code, 'url_refused', url);
      assert.is(error.reason, reason, url);
      const verdict = await validateUrl(url, { resolve: modelledDns });
      assert.is(verdict.ok ? 'ok' : verdict.reason, reason, url);
    }
  } finally {
    watch.stop();
  }
  assert.equal(watch.attempts, []);
  assert.is(trap.connections, 0);
  assert.is(trap6.connections, 0);
});

test('the allowlist knob opens exactly the ranges it names', async () => {
  const allowCidrs = ['127.0.0.2/32'];
  const allowed = await validateUrl('http://127.0.0.2/', { allowCidrs });
  assert.ok(allowed.ok);
  const stillRefused = await validateUrl('http://127.0.0.1/', { allowCidrs });
  assert.is(stillRefused.ok ? 'ok' : stillRefused.reason, 'loopback');
  const mapped = await validateUrl('http://[::ffff:127.0.0.2]/', { allowCidrs });
  assert.equal(
    mapped.ok && mapped.addresses,
    [v4('127.0.0.2')],
    'a mapped address is judged and dialled as its IPv4 form',
  );
});

test('public addresses pass the policy (checked only: nothing is dialled)', async () => {
  for (const url of [`http://${PUBLIC}/`, 'https://[2606:4700::1]/', 'http://[::ffff:93.184.216.34]/']) {
    const verdict = await validateUrl(url);
    assert.ok(verdict.ok, url);
  }
});

// Redirects: a "public-looking" host (a name answering 127.0.0.2, which the allowlist opens
// as a stand-in for a public address) that redirects to forbidden targets. Each redirect hop
// is re-validated, so the only address ever dialled is 127.0.0.2.
let origin: LoopbackServer;
const publicName = (): Resolver => async (hostname) =>
  hostname === 'public.example' ? [v4('127.0.0.2')] : modelledDns(hostname);
test('redirects from a public-looking host to forbidden targets are refused at the hop', async () => {
  origin = await serveHttp((req, res) => {
    const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
    res.writeHead(302, { location: to }).end();
  }, '127.0.0.2');
  const start = `http://public.example:${origin.port}/go?to=`;
  const P = trap.port;
  const cases: [string, string][] = [
    [`http://127.0.0.1:${P}/`, 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'link_local'],
    [`http://localhost:${P}/`, 'loopback'],
    [`http://2130706433:${P}/`, 'loopback'],
    [`http://[::1]:${P}/`, 'loopback'],
    [`http://[::ffff:127.0.0.1]:${P}/`, 'loopback'],
    [`//127.0.0.1:${P}/`, 'loopback'],
    ['file:///etc/passwd', 'unsupported_scheme'],
    [`http://user:pw@public.example:${origin.port}/`, 'credentials_in_url'],
    // Two hops through the public host before the forbidden one.
    [`/go?to=${encodeURIComponent(`/go?to=${encodeURIComponent('http://10.0.0.1/')}`)}`, 'private'],
  ];
  const policy = { ...productionPolicy(), allowCidrs: ['127.0.0.2/32'] };
  const watch = watchConnectionAttempts();
  try {
    for (const [target, reason] of cases) {
      const error = await refusal(() =>
        safeFetch(start + encodeURIComponent(target), policy, { resolve: publicName() }),
      );
      assert.is(error.code, 'url_refused', target);
      assert.is(error.reason, reason, target);
      assert.match(error.message, /after \d redirect/);
    }
  } finally {
    watch.stop();
    await origin.close();
  }
  assert.ok(watch.attempts.length >= cases.length, 'the public-looking host was reached');
  assert.equal(
    watch.attempts.filter((a) => !a.startsWith('127.0.0.2:')),
    [],
    'nothing but the public-looking host was dialled',
  );
  assert.is(trap.connections, 0);
  assert.is(trap6.connections, 0);
});

test('DNS rebinding: a name answering a public address first and a private one second is dialled at the checked address', async () => {
  // The page lives on 127.0.0.2:P (standing in for the public answer); the trap listens on
  // 127.0.0.1:P, where a second lookup would send the connection.
  const page = await serveHttp((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<p>the checked host</p>');
  }, '127.0.0.2');
  const rebindTrap = await trapListener('127.0.0.1', page.port);
  let lookups = 0;
  const rebinding: Resolver = async (hostname) => {
    assert.is(hostname, 'rebind.example');
    lookups += 1;
    return [v4(lookups === 1 ? '127.0.0.2' : '127.0.0.1')];
  };
  const url = `http://rebind.example:${page.port}/`;
  try {
    const fetched = await safeFetch(
      url,
      { ...productionPolicy(), allowCidrs: ['127.0.0.2/32'] },
      { resolve: rebinding },
    );
    assert.is(fetched.bytes.toString(), '<p>the checked host</p>');
    assert.is(fetched.address, '127.0.0.2');
    assert.is(lookups, 1, 'one lookup per hop, never a second one at connect time');
    assert.is(rebindTrap.connections, 0);

    // Control: a client that checks and then lets the socket resolve again lands in the trap,
    // so the trap would have caught the safe fetch doing the same.
    await new Promise<void>((resolve, reject) => {
      http
        .get(
          url,
          {
            agent: false,
            lookup: ((name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
              void rebinding(name).then((answers) =>
                options.all ? callback(null, answers) : callback(null, answers[0]!.address, 4),
              );
            }) as never,
          },
          (res) => res.resume(),
        )
        .on('error', () => resolve())
        .on('close', () => resolve())
        .on('timeout', reject);
    });
    assert.is(rebindTrap.connections, 1);
  } finally {
    await page.close();
    await rebindTrap.close();
  }
});

test.run();
