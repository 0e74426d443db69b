// The mock's version: a digest of its own source, so that a change to how it answers gives
// tier 1 another LLM identity and no memo of the old answers is served (cli/tier1.ts).

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sha256Hex } from '../lib/hash.ts';

function sourceDigest(dir: string): string {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.ts'))
    .sort();
  return sha256Hex(files.map((name) => `${name}\u0000${readFileSync(path.join(dir, name), 'utf8')}`).join('\u0000'));
}

export const MOCK_VERSION = sourceDigest(import.meta.dirname).slice(0, 12);
