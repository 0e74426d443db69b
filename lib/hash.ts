// The one content digest of the service: sha256 in hex, over bytes or UTF-8 text. Memo keys,
// document identity, embedding freshness and migration checksums all compare these strings.

import { createHash } from 'node:crypto';

export const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
