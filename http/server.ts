// `ingest serve` as a library: the engine worker, the routes, the listening socket, and a
// graceful stop (stop accepting, let a running walk finish within the grace, close pools).

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Request } from 'polka';
import type { Config } from '../lib/config.ts';
import { FailureDirective } from '../lib/failure-directive.ts';
import { WalkRegistry } from './walk-registry.ts';
import { EngineThread } from '../engine/thread/thread-handle.ts';
import type { Logger } from '../lib/log.ts';
import { createApp } from './app.ts';
import { createExtractPool } from './extract-pool.ts';
import { scheduleWalks } from './walk-schedule.ts';
import { listen } from '../lib/net/listen.ts';

/** The URL this host reaches a sidecar listening on `host` by: a wildcard address means loopback. */
export function loopbackUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** How long a stopping sidecar's engine may take to finish its walk and close its pools. */
const SHUTDOWN_GRACE_MS = 30_000;

export interface Sidecar {
  readonly url: string;
  readonly server: Server;
  readonly engine: EngineThread;
  stop(graceMs?: number): Promise<void>;
}

export async function startSidecar(config: Config, log: Logger): Promise<Sidecar> {
  const engine = new EngineThread(config, log);
  await engine.ready;
  const extractPool = createExtractPool(config.extract);
  const app = createApp({
    config,
    log,
    engine,
    registry: new WalkRegistry(),
    directive: new FailureDirective(),
    extractPool,
  });
  // The server is ours rather than polka's (its listen() leaves a listen error unheard); polka's
  // handler fills in a Request's own fields from the IncomingMessage, as its listen() has it do.
  const server = createServer((req, res) => app.handler(req as Request, res));
  try {
    await listen(server, config.http.port, config.http.host);
  } catch (error) {
    await engine.shutdown(SHUTDOWN_GRACE_MS);
    await extractPool.close();
    throw error;
  }
  const { address, port } = server.address() as AddressInfo;
  const url = loopbackUrl(address, port);
  log.info({ url }, 'sidecar listening');
  const schedule =
    config.walkSchedule === null
      ? null
      : scheduleWalks(config.walkSchedule, `${url}/walk`, config.secrets.pipelineTrigger!, log);
  return {
    url,
    server,
    engine,
    async stop(graceMs = SHUTDOWN_GRACE_MS) {
      schedule?.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await engine.shutdown(graceMs);
      server.closeAllConnections();
      await closed;
      await extractPool.close();
    },
  };
}
