// validate_url (docs/behaviour/stages.md#stage-1-source-walk): may this URL be fetched, and at
// which addresses? Only http and https, no credentials in the URL, and every address the host
// resolves to must be ordinary public unicast. The range logic is ipaddr.js's table of special
// ranges (RFC 6890 and successors) plus the few names it lumps together or lacks; an address it
// does not know as special is public only if it is IPv4, or IPv6 inside 2000::/3 (the rest of the
// IPv6 space is unallocated or embeds an IPv4 address we cannot vouch for).
//
// Odd spellings of IPv4 (2130706433, 0x7f.1, 017700000001, 127.1) never reach this module
// unnormalised: the WHATWG URL parser rewrites such hosts to dotted decimal, so the address
// judged is the address that would be dialled. The fetch connects to exactly the addresses
// returned here (lib/net/safe-fetch.ts), so a DNS answer that changes between check and
// connect (rebinding) cannot redirect it.

import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has; injectable so tests never touch real DNS. */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, order: 'verbatim' });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Why a URL is refused: a defect of the URL, or the range its address falls in. */
export type RefusalReason =
  'invalid_url' | 'unsupported_scheme' | 'credentials_in_url' | 'dns_failed' | 'no_address' | AddressRange;

/** Names of the address ranges the policy refuses. */
export type AddressRange =
  | 'unspecified'
  | 'broadcast'
  | 'multicast'
  | 'link_local'
  | 'loopback'
  | 'carrier_grade_nat'
  | 'private'
  | 'unique_local'
  | 'site_local'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'as112'
  | 'amt'
  | 'discard'
  | 'ipv4_compatible'
  | 'ipv4_translated'
  | 'nat64'
  | '6to4'
  | 'teredo'
  | 'orchid'
  | 'drone_remote_id'
  | 'segment_routing';

export type UrlVerdict =
  | { ok: true; url: URL; hostname: string; addresses: readonly ResolvedAddress[] }
  | { ok: false; reason: RefusalReason; address: string | null; detail: string };

export interface ValidateOptions {
  /** CIDRs allowed although the policy forbids them (INGEST_FETCH_ALLOW_CIDRS). */
  allowCidrs?: readonly string[];
  resolve?: Resolver;
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

/** ipaddr.js range names whose snake_case spelling would not say what they are. */
const RANGE_NAMES: Readonly<Record<string, AddressRange>> = {
  rfc6145: 'ipv4_translated',
  rfc6052: 'nat64',
  deprecatedSiteLocal: 'site_local',
  as112v6: 'as112',
  deprecatedOrchid: 'orchid',
  orchid2: 'orchid',
  droneRemoteIdProtocolEntityTags: 'drone_remote_id',
};

/** Ranges ipaddr.js files under "reserved" (or not at all) that deserve their own name. */
const NAMED_RANGES: readonly [AddressRange, Cidr][] = [
  ['documentation', ipaddr.parseCIDR('192.0.2.0/24')],
  ['documentation', ipaddr.parseCIDR('198.51.100.0/24')],
  ['documentation', ipaddr.parseCIDR('203.0.113.0/24')],
  ['documentation', ipaddr.parseCIDR('2001:db8::/32')],
  ['documentation', ipaddr.parseCIDR('3fff::/20')],
  ['benchmarking', ipaddr.parseCIDR('198.18.0.0/15')],
];
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

const inRange = (address: Address, [base, bits]: Cidr): boolean =>
  address.kind() === base.kind() && address.match(base as never, bits);

/** The range that forbids this address, or null when it is public unicast. */
export function forbiddenRange(address: Address): AddressRange | null {
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    // ::ffff:a.b.c.d is dialled as a.b.c.d: judge the embedded address.
    return forbiddenRange((address as ipaddr.IPv6).toIPv4Address());
  }
  const special: string = address.range();
  const named = NAMED_RANGES.find(([, cidr]) => inRange(address, cidr))?.[0];
  if (named !== undefined) return named;
  if (special !== 'unicast')
    return RANGE_NAMES[special] ?? (special.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) as AddressRange);
  if (address.kind() === 'ipv6' && !inRange(address, IPV6_GLOBAL_UNICAST)) {
    return inRange(address, IPV4_COMPATIBLE) ? 'ipv4_compatible' : 'reserved';
  }
  return null;
}

function compileAllowList(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((cidr) => ipaddr.parseCIDR(cidr));
}

/** Judges one address (a literal or a DNS answer) against the policy and the allowlist. */
export function checkAddress(
  text: string,
  allow: readonly Cidr[],
): { ok: true; address: ResolvedAddress } | { ok: false; reason: AddressRange } {
  // ipaddr.process unwraps IPv4-mapped IPv6, so the allowlist and the dialled address agree.
  const address = ipaddr.process(text);
  const resolved: ResolvedAddress = { address: address.toString(), family: address.kind() === 'ipv4' ? 4 : 6 };
  if (allow.some((cidr) => inRange(address, cidr))) return { ok: true, address: resolved };
  const reason = forbiddenRange(address);
  return reason === null ? { ok: true, address: resolved } : { ok: false, reason };
}

const refuse = (reason: RefusalReason, detail: string, address: string | null = null): UrlVerdict => ({
  ok: false,
  reason,
  address,
  detail,
});

/** Checks a URL without connecting anywhere: it only parses and resolves DNS. */
export async function validateUrl(input: string | URL, options: ValidateOptions = {}): Promise<UrlVerdict> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return refuse('invalid_url', 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return refuse('unsupported_scheme', `scheme ${url.protocol} is not http or https`);
  if (url.username !== '' || url.password !== '')
    return refuse('credentials_in_url', 'the URL carries a user name or password');
  const ipv6Literal = url.hostname.startsWith('[');
  const hostname = ipv6Literal ? url.hostname.slice(1, -1) : url.hostname;
  if (hostname === '') return refuse('invalid_url', 'the URL has no host');
  const allow = compileAllowList(options.allowCidrs ?? []);

  let candidates: readonly ResolvedAddress[];
  // The URL parser leaves an IP host only as [IPv6] or dotted-decimal IPv4; anything else is a name.
  if (ipv6Literal || ipaddr.IPv4.isValidFourPartDecimal(hostname)) {
    candidates = [{ address: hostname, family: ipv6Literal ? 6 : 4 }];
  } else {
    try {
      candidates = await (options.resolve ?? systemResolver)(hostname);
    } catch (error) {
      return refuse(
        'dns_failed',
        `${hostname} did not resolve (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    if (candidates.length === 0) return refuse('no_address', `${hostname} resolved to no address`);
  }
  // Every answer must pass: a name that answers a public and a private address is refused
  // rather than trusted to be dialled at the public one.
  const addresses: ResolvedAddress[] = [];
  for (const candidate of candidates) {
    if (!ipaddr.isValid(candidate.address))
      return refuse('no_address', `${hostname} resolved to something that is not an address`);
    const verdict = checkAddress(candidate.address, allow);
    if (!verdict.ok) {
      const where =
        candidate.address === hostname ? candidate.address : `${hostname} resolves to ${candidate.address}, which`;
      return refuse(verdict.reason, `${where} is in the ${verdict.reason} range`, candidate.address);
    }
    addresses.push(verdict.address);
  }
  return { ok: true, url, hostname, addresses };
}
