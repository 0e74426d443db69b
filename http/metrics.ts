// GET /metrics: Prometheus metrics (docs/OPERATIONS.md "Read the metrics"), never publicly routed.
// Loopback peers are answered as they are (a scraper beside the container, the health
// tooling); any other peer needs INGEST_METRICS_TOKEN as its bearer, and with no token set it
// is refused (auth 'metrics', http/access.ts). The text is this thread's process figures and
// the engine thread's own registry.

import { Type } from '@sinclair/typebox';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { defineRoute } from './route.ts';

export const metricsRoute = defineRoute({
  method: 'GET',
  path: '/metrics',
  operationId: 'metrics',
  tag: 'operations',
  summary: 'Prometheus metrics',
  description:
    'The Prometheus text exposition (format 0.0.4); each family carries its HELP line. Not publicly routed. A loopback peer is answered without a token; any other peer needs the bearer INGEST_METRICS_TOKEN, and with INGEST_METRICS_TOKEN unset it is refused.',
  auth: 'metrics',
  answers: {
    200: { description: 'the metrics', schema: Type.String(), mediaType: 'text/plain; version=0.0.4' },
  },
  refusals: [],
  handler: ({ engine }) => {
    const own = new Registry();
    collectDefaultMetrics({ register: own });
    return async ({ res }) => {
      const body = `${await own.metrics()}\n${await engine.metrics()}`;
      res.writeHead(200, { 'content-type': own.contentType, 'cache-control': 'no-store' }).end(body);
    };
  },
});
