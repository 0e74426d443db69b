// `ingest health [--url U]`: the container's health check for the sidecar, with no curl in the
// image: exit 0 when GET /health answers 200 within five seconds, 1 otherwise.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';

/** Where this process's own sidecar listens, seen from inside its container. */
function ownSidecarUrl(config: Config): string {
  const host = config.http.host;
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return `http://${reachable}:${config.http.port}`;
}

export async function healthCommand(args: string[], { config }: { config: Config }): Promise<number> {
  const { values } = parseArgs({ args, options: { url: { type: 'string' } }, allowPositionals: false });
  const url = `${values.url ?? ownSidecarUrl(config)}/health`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (response.status === 200) return 0;
    process.stderr.write(`ingest health: ${url} answered ${response.status}\n`);
  } catch (error) {
    process.stderr.write(`ingest health: ${url}: ${(error as Error).message}\n`);
  }
  return 1;
}
