// GET /metrics: Prometheus metrics (docs/OPERATIONS.md "Read the metrics"), never publicly routed.
// Loopback peers are answered as they are (a scraper beside the container, the health
// tooling); any other peer needs INGEST_METRICS_TOKEN as its bearer, and with no token set it
// is refused. The text is this thread's process figures and the engine thread's own registry.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { EngineThread } from '../engine/thread-handle.ts';
import { isLoopback, requireBearer } from './auth.ts';
import { HttpError } from './errors.ts';

export function metricsRoute(engine: Pick<EngineThread, 'metrics'>, token: string | null) {
  const own = new Registry();
  collectDefaultMetrics({ register: own });
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    requireMetricsAccess(req, token);
    const body = `${await own.metrics()}\n${await engine.metrics()}`;
    res.writeHead(200, { 'content-type': own.contentType, 'cache-control': 'no-store' }).end(body);
  };
}

/** Loopback peers pass; any other needs the metrics token as its bearer, and none passes without one. */
export function requireMetricsAccess(req: Pick<IncomingMessage, 'socket' | 'headers'>, token: string | null): void {
  if (isLoopback(req.socket.remoteAddress)) return;
  if (token === null)
    throw new HttpError(
      403,
      'loopback_only',
      '/metrics answers loopback peers only unless INGEST_METRICS_TOKEN is set',
    );
  requireBearer(req, token, 'metrics_disabled', 'INGEST_METRICS_TOKEN');
}
