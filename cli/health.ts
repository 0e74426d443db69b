// `ingest health [--url U]`: the container's health check for the sidecar, with no curl in the
// image: exit 0 when GET /health answers 200 within five seconds, 1 otherwise.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import { loopbackUrl } from '../http/server.ts';

export async function healthCommand(args: string[], { config }: { config: Config }): Promise<number> {
  const { values } = parseArgs({ args, options: { url: { type: 'string' } }, allowPositionals: false });
  const url = `${values.url ?? loopbackUrl(config.http.host, config.http.port)}/health`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (response.status === 200) return 0;
    process.stderr.write(`ingest health: ${url} answered ${response.status}\n`);
  } catch (error) {
    process.stderr.write(`ingest health: ${url}: ${(error as Error).message}\n`);
  }
  return 1;
}
