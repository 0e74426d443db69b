// GET /health (docs/behaviour/routes.md#get-health): 200 while the engine worker thread is alive,
// 503 after it died. No data is returned.

import { defineRoute } from './route.ts';

export const healthRoute = defineRoute({
  method: 'GET',
  path: '/health',
  operationId: 'health',
  tag: 'operations',
  summary: 'Liveness of the engine worker thread',
  description:
    'No body either way. Publicly routed. On platform hosts it sits behind the edge access token; the sidecar itself asks for nothing.',
  auth: 'none',
  answers: {
    200: { description: 'the engine worker thread is alive' },
    503: { description: 'the engine worker thread died (a crash); restart the sidecar' },
  },
  refusals: [],
  handler:
    ({ engine }) =>
    async ({ res }) => {
      res.writeHead(engine.alive ? 200 : 503, { 'cache-control': 'no-store', 'content-length': '0' }).end();
    },
});
