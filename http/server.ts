// `ingest serve` as a library: the engine worker, the routes, the listening socket, and a
// graceful stop (stop accepting, let a running walk finish within the grace, close pools).

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../lib/config.ts';
import { FailureDirective } from '../lib/failure-directive.ts';
import { WalkRegistry } from './walk-registry.ts';
import { EngineThread } from '../engine/thread/thread-handle.ts';
import type { Logger } from '../lib/log.ts';
import { createApp } from './app.ts';
import { createExtractPool } from './extract-pool.ts';
import { scheduleWalks } from './walk-schedule.ts';

/** The URL this host reaches a sidecar listening on `host` by: a wildcard address means loopback. */
export function loopbackUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

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
  const server: Server = await new Promise((resolve, reject) => {
    app.listen(config.http.port, config.http.host, (error?: Error) => (error ? reject(error) : resolve(app.server!)));
  });
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
    async stop(graceMs = 30_000) {
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
