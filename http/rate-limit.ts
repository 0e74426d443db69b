// Per-client rate limits (docs/behaviour/routes.md#authentication), each counted per client over a
// one-minute window; over the limit is 429 with Retry-After in seconds. Failed authentications have
// a limit of their own, checked before the bearer, so guessing tokens is as limited as using them.
//
// The client is the socket's peer, unless INGEST_TRUSTED_PROXY_HEADER names the header a proxy in
// front (the tunnel, the edge) sets to the address it saw: behind one, every client would
// otherwise share the proxy's address and one bucket. Off by default, since a client that can
// reach the sidecar directly could write that header itself.

import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../lib/config.ts';
import { HttpError } from './errors.ts';

/** The routes with a per-minute limit of their own, and the knob that sets each. */
export const RATE_LIMIT_KNOBS = {
  walk: 'INGEST_RATE_LIMIT_WALK',
  walkStatus: 'INGEST_RATE_LIMIT_WALK_STATUS',
  extract: 'INGEST_RATE_LIMIT_EXTRACT',
  producerRun: 'INGEST_RATE_LIMIT_PRODUCER_RUN',
} as const satisfies Partial<Record<keyof Config['rateLimits'], string>>;
export type RateLimited = keyof typeof RATE_LIMIT_KNOBS;
export const AUTH_FAILURES_KNOB = 'INGEST_RATE_LIMIT_AUTH_FAILURES';

/** The client a request counts against: the trusted header's last address, else the socket peer. */
export function clientOf(req: IncomingMessage, trustedHeader: string | null): string {
  const value = trustedHeader === null ? undefined : req.headers[trustedHeader];
  const last = (Array.isArray(value) ? value.at(-1) : value)?.split(',').at(-1)?.trim();
  if (last !== undefined && ipaddr.isValid(last)) return last;
  return req.socket.remoteAddress ?? 'unknown';
}

function refused(limit: number, what: string, refusal: RateLimiterRes): HttpError {
  const seconds = Math.max(1, Math.ceil(refusal.msBeforeNext / 1000));
  return new HttpError(
    429,
    'rate_limited',
    `more than ${limit} ${what} a minute; retry in ${seconds} s`,
    {},
    {
      'retry-after': String(seconds),
    },
  );
}

export type RateLimit = (client: string) => Promise<void>;

export function perMinute(limit: number): RateLimit {
  const limiter = new RateLimiterMemory({ points: limit, duration: 60 });
  return async (client) => {
    try {
      await limiter.consume(client);
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      throw refused(limit, 'requests', refusal);
    }
  };
}

/** Failed authentications per client: `check` refuses a client past the limit, `failed` counts one. */
export function authFailureLimit(limit: number) {
  const limiter = new RateLimiterMemory({ points: limit, duration: 60 });
  return {
    async check(client: string): Promise<void> {
      const seen = await limiter.get(client);
      if (seen !== null && seen.consumedPoints >= limit) throw refused(limit, 'failed authentications', seen);
    },
    async failed(client: string): Promise<void> {
      await limiter.penalty(client, 1);
    },
  };
}
