// The one content digest of the service: sha256 in hex, over bytes or UTF-8 text. Memo keys,
// document identity, embedding freshness and migration checksums all compare these strings.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

export const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** The sha256 of a file's bytes, read as a stream (never held whole). */
export async function sha256OfFile(file: string | Buffer): Promise<string> {
  const hash = createHash('sha256');
  for await (const piece of createReadStream(file)) hash.update(piece as Buffer);
  return hash.digest('hex');
}
