// `ingest serve [--host H] [--port N]`: the long-lived sidecar. Boot never walks.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { startSidecar } from '../http/server.ts';
import { startMockTierIfUnconfigured } from './tier1.ts';

export async function serveCommand(args: string[], { config, log }: { config: Config; log: Logger }): Promise<number> {
  const { values } = parseArgs({ args, options: { host: { type: 'string' }, port: { type: 'string' } } });
  const port = values.port === undefined ? config.http.port : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw Object.assign(new TypeError('--port must be a whole number from 0 to 65535'), {
      code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
    });
  }
  // Tier 1 runs on this thread: the engine thread, started after it, inherits the variables that
  // point at it and reaches it on loopback like any endpoint.
  const tier1 = await startMockTierIfUnconfigured(log);
  const sidecar = await startSidecar({ ...config, http: { host: values.host ?? config.http.host, port } }, log).catch(
    async (error: unknown) => {
      await tier1.close();
      throw error;
    },
  );
  process.stdout.write(`ingest sidecar on ${sidecar.url}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('shutting down: no new requests; a running walk may finish');
  await sidecar.stop();
  await tier1.close();
  return 0;
}
