// Per-client rate limits on the authenticated POST routes (SPEC.md 5), counted per remote
// address over a one-minute window; over the limit is 429 with Retry-After in seconds.
// The edge proxy and the tunnel check their own headers; we key on the socket's peer.

import type { IncomingMessage } from 'node:http';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { HttpError } from './errors.ts';

export type RateLimit = (req: IncomingMessage) => Promise<void>;

export function perMinute(limit: number): RateLimit {
  const limiter = new RateLimiterMemory({ points: limit, duration: 60 });
  return async (req) => {
    try {
      await limiter.consume(req.socket.remoteAddress ?? 'unknown');
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      const seconds = Math.max(1, Math.ceil(refusal.msBeforeNext / 1000));
      throw new HttpError(
        429,
        'rate_limited',
        `more than ${limit} requests a minute; retry in ${seconds} s`,
        {},
        { 'retry-after': String(seconds) },
      );
    }
  };
}
