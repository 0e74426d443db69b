// Bearer checks (docs/behaviour/routes.md#authentication): constant-time comparison, fail closed
// when the secret is unset. Both sides are hashed first so the comparison takes the same time
// whatever the lengths.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './errors.ts';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function bearerMatches(header: string | undefined, secret: string): boolean {
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? '';
  // Always compare, even for a missing token, so the two paths cost the same.
  const same = timingSafeEqual(digest(presented), digest(secret));
  return same && presented !== '';
}

/**
 * Throws the route's refusal unless the request carries the secret: 503 when the secret is
 * not configured (fail closed), 401 for a missing or wrong bearer.
 */
export function requireBearer(
  req: Pick<IncomingMessage, 'headers'>,
  secret: string | null,
  disabledError: string,
  secretName: string,
): void {
  if (secret === null)
    throw new HttpError(503, disabledError, `${secretName} is not configured on this sidecar; the route is closed`);
  if (!bearerMatches(req.headers.authorization, secret)) {
    throw new HttpError(401, 'unauthorized', 'a valid bearer token is required', {}, { 'www-authenticate': 'Bearer' });
  }
}

/** Whether a peer address is this host's loopback (IPv4, IPv6, or IPv4 mapped into IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  return plain === '::1' || /^127\.\d+\.\d+\.\d+$/.test(plain);
}
