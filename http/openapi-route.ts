// GET /openapi.json: the OpenAPI 3.1 description of this sidecar (http/openapi.ts). No auth,
// like /health: the document holds no secret and tells nothing a caller could not learn by
// trying the routes (docs/DECISIONS.md "The HTTP sidecar"). Serialised once.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { openApiDocument } from './openapi.ts';

export function openApiRoute() {
  const body = JSON.stringify(openApiDocument);
  return async (_req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(body);
  };
}
