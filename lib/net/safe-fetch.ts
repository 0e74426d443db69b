// The SSRF-safe fetch (docs/behaviour/stages.md#stage-1-source-walk): every URL the service fetches
// goes through here.
//
// - Each hop (the URL, then every redirect target) passes validateUrl first; the socket then
//   dials exactly the addresses that were checked, through a lookup function that answers
//   with them instead of asking DNS again, so a name that answers differently the second
//   time (DNS rebinding) cannot move the connection. No connection is pooled or reused.
// - Redirects are followed by hand, at most policy.maxRedirects of them, always as GET.
// - One deadline covers the whole fetch (every hop, headers and body): a server that trickles
//   bytes (slow-loris) ends as `timeout`. A declared Content-Length over the byte cap is
//   refused before any body is read; the counted body (after decompression, so a gzip bomb
//   counts at its inflated size) is cut at the cap as `too_large`. Only the configured media
//   types are read at all.
//
// - fetchIfChanged sends back the validators of the page's last answer (ETag as If-None-Match,
//   Last-Modified as If-Modified-Since): an unchanged page then costs a 304 and no body.
//
// Every failure is a FetchError with a named code, so one bad URL fails one item clearly.

import http from 'node:http';
import https from 'node:https';
import type { LookupAddress } from 'node:dns';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { Config } from '../config.ts';
import { withDeadline } from '../deadline.ts';
import { validateUrl, type RefusalReason, type Resolver, type UrlVerdict } from './validate-url.ts';
import { IngestError } from '../errors.ts';

export type FetchPolicy = Config['fetch'];

export type FetchErrorCode =
  | 'url_refused'
  | 'too_many_redirects'
  | 'http_status'
  | 'unsupported_content_type'
  | 'unsupported_content_encoding'
  | 'corrupt_body'
  | 'too_large'
  | 'timeout'
  | 'connection_failed';

export class FetchError extends IngestError {
  declare readonly code: FetchErrorCode;
  /** For url_refused: the named reason validateUrl gave. */
  readonly reason: RefusalReason | null;
  /** For http_status: the status the server answered. */
  readonly status: number | null;
  constructor(
    code: FetchErrorCode,
    message: string,
    extra: { reason?: RefusalReason; status?: number; cause?: unknown } = {},
  ) {
    super(code, message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.reason = extra.reason ?? null;
    this.status = extra.status ?? null;
  }
}

export interface FetchedPage {
  /** The URL the bytes came from, after redirects. */
  url: string;
  /** The address the last hop connected to. */
  address: string;
  /** The response's media type, lower case, without parameters. */
  mediaType: string;
  /** The charset the response declared, if any. */
  charset: string | null;
  bytes: Buffer;
  redirects: number;
  /** What the answer said of the page's version, to send back next time. */
  validators: CacheValidators;
}

/** A page's version as its server named it: an entity tag, a modification date, or neither. */
export interface CacheValidators {
  etag: string | null;
  lastModified: string | null;
}

export interface SafeFetchOptions {
  /** DNS for every hop; the system resolver unless a test models one. */
  resolve?: Resolver;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const REQUEST_HEADERS = Object.freeze({
  'user-agent': 'ingest-sidecar (reference fetch)',
  accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1',
  'accept-encoding': 'gzip, deflate, br',
});

export async function safeFetch(
  url: string,
  policy: FetchPolicy,
  options: SafeFetchOptions = {},
): Promise<FetchedPage> {
  return (await fetchPage(url, policy, options, null))!;
}

/** safeFetch sending `validators` back: null when the server answers that the page has not changed (304). */
export function fetchIfChanged(
  url: string,
  policy: FetchPolicy,
  validators: CacheValidators | null,
  options: SafeFetchOptions = {},
): Promise<FetchedPage | null> {
  return fetchPage(url, policy, options, validators);
}

function fetchPage(
  url: string,
  policy: FetchPolicy,
  options: SafeFetchOptions,
  validators: CacheValidators | null,
): Promise<FetchedPage | null> {
  return withDeadline(policy.timeoutMs, async (deadline) => {
    try {
      return await followHops(url, policy, options.resolve, deadline, conditionalHeaders(validators));
    } catch (error) {
      if (error instanceof FetchError) throw error;
      if (deadline.aborted)
        throw new FetchError('timeout', `no complete answer within ${policy.timeoutMs} ms`, { cause: error });
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new FetchError('connection_failed', `the connection failed (${code})`, { cause: error });
    }
  });
}

/** The request headers that send validators back; none when there are none. */
function conditionalHeaders(validators: CacheValidators | null): Record<string, string> {
  return {
    ...(validators?.etag == null ? {} : { 'if-none-match': validators.etag }),
    ...(validators?.lastModified == null ? {} : { 'if-modified-since': validators.lastModified }),
  };
}

async function followHops(
  url: string,
  policy: FetchPolicy,
  resolve: Resolver | undefined,
  signal: AbortSignal,
  conditional: Record<string, string>,
): Promise<FetchedPage | null> {
  let current = url;
  for (let redirects = 0; ; redirects += 1) {
    const verdict = await untilAborted(
      validateUrl(current, { allowCidrs: policy.allowCidrs, ...(resolve ? { resolve } : {}) }),
      signal,
    );
    if (!verdict.ok) {
      const hop = redirects === 0 ? '' : ` (after ${redirects} redirect${redirects === 1 ? '' : 's'})`;
      throw new FetchError('url_refused', `refused${hop}: ${verdict.detail}`, { reason: verdict.reason });
    }
    const response = await request(verdict, signal, conditional);
    const status = response.statusCode ?? 0;
    // Not modified is an answer only to validators this fetch sent; unasked, it is a bad status.
    if (status === 304 && Object.keys(conditional).length > 0) {
      response.destroy();
      return null;
    }
    if (REDIRECT_STATUSES.has(status)) {
      response.destroy();
      const location = response.headers.location;
      if (location === undefined)
        throw new FetchError('http_status', `HTTP ${status} without a Location header`, { status });
      if (redirects >= policy.maxRedirects)
        throw new FetchError('too_many_redirects', `more than ${policy.maxRedirects} redirects`);
      // An unparsable target is left to validateUrl, which names it invalid_url.
      current = URL.canParse(location, verdict.url.href) ? new URL(location, verdict.url).href : location;
      continue;
    }
    if (status < 200 || status > 299) {
      response.destroy();
      throw new FetchError('http_status', `HTTP ${status}`, { status });
    }
    const address = response.socket?.remoteAddress ?? verdict.addresses[0]!.address;
    const validators = {
      etag: response.headers.etag ?? null,
      lastModified: response.headers['last-modified'] ?? null,
    };
    return { ...(await readBody(response, policy)), url: verdict.url.href, address, redirects, validators };
  }
}

/** One GET on a fresh connection to the checked addresses; resolves when the headers arrive. */
function request(
  target: Extract<UrlVerdict, { ok: true }>,
  signal: AbortSignal,
  conditional: Record<string, string>,
): Promise<http.IncomingMessage> {
  const { url, hostname, addresses } = target;
  // Stands in for DNS: the socket may dial only the addresses validateUrl judged (all of
  // them, so Node can still fall back between IPv6 and IPv4).
  const pinnedLookup = (name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void): void => {
    if (name !== hostname) {
      callback(
        Object.assign(new Error(`refusing to resolve ${name}: only ${hostname} was checked`), { code: 'ENOTFOUND' }),
      );
    } else if (options.all === true) {
      callback(
        null,
        addresses.map((a): LookupAddress => ({ address: a.address, family: a.family })),
      );
    } else {
      callback(null, addresses[0]!.address, addresses[0]!.family);
    }
  };
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      {
        host: hostname,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { ...REQUEST_HEADERS, ...conditional },
        agent: false,
        lookup: pinnedLookup as never,
        signal,
      },
      resolve,
    );
    req.once('error', reject);
    req.end();
  });
}

async function readBody(
  response: http.IncomingMessage,
  policy: FetchPolicy,
): Promise<Pick<FetchedPage, 'mediaType' | 'charset' | 'bytes'>> {
  try {
    const { mediaType, charset } = parseContentType(response.headers['content-type']);
    if (!policy.contentTypes.includes(mediaType)) {
      throw new FetchError(
        'unsupported_content_type',
        `content type ${mediaType === '' ? '(none)' : mediaType} is not one of ${policy.contentTypes.join(', ')}`,
      );
    }
    const declared = Number(response.headers['content-length'] ?? Number.NaN);
    if (declared > policy.maxBytes) {
      throw new FetchError(
        'too_large',
        `the response declares ${declared} bytes, over the limit of ${policy.maxBytes}`,
      );
    }
    const decoder = decoderFor(response.headers['content-encoding']);
    const body: Readable = decoder === null ? response : pipeline(response, decoder, () => {});
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        total += chunk.length;
        if (total > policy.maxBytes)
          throw new FetchError('too_large', `the response passed the limit of ${policy.maxBytes} bytes`);
        chunks.push(chunk);
      }
    } catch (error) {
      if (decoder !== null && String((error as NodeJS.ErrnoException).code).startsWith('Z_')) {
        throw new FetchError(
          'corrupt_body',
          `the ${String(response.headers['content-encoding'])} body does not decode`,
          { cause: error },
        );
      }
      throw error;
    }
    return { mediaType, charset, bytes: Buffer.concat(chunks, total) };
  } finally {
    response.destroy();
  }
}

function parseContentType(header: string | undefined): { mediaType: string; charset: string | null } {
  const [type = '', ...parameters] = (header ?? '').split(';');
  const charset = parameters
    .map((p) => /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(p)?.[1])
    .find((c) => c !== undefined);
  return { mediaType: type.trim().toLowerCase(), charset: charset?.toLowerCase() ?? null };
}

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  switch ((encoding ?? 'identity').trim().toLowerCase()) {
    case 'identity':
    case '':
      return null;
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      throw new FetchError('unsupported_content_encoding', `content encoding ${encoding} is not supported`);
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
