// `ingest check-url URL...`: validate_url for operators checking a ledger by hand. One JSON
// line per URL, {"url", "ok", "address", "reason"}; it resolves DNS and connects to nothing.
// Exit 1 when any URL is refused.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import { validateUrl } from '../lib/net/validate-url.ts';
import { usageError } from './usage.ts';

export async function checkUrlCommand(args: string[], { config }: { config: Config }): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
  if (positionals.length === 0) throw usageError('check-url needs at least one URL');
  let refused = 0;
  for (const url of positionals) {
    const verdict = await validateUrl(url, { allowCidrs: config.fetch.allowCidrs });
    const line = verdict.ok
      ? { url, ok: true, address: verdict.addresses[0]!.address, reason: null }
      : { url, ok: false, address: verdict.address, reason: verdict.reason };
    if (!verdict.ok) refused += 1;
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
  return refused === 0 ? 0 : 1;
}
