// GET /openapi.json: the OpenAPI 3.1 description of this sidecar, generated from the route
// definitions (http/openapi.ts). No auth, like /health: the document holds no secret and tells
// nothing a caller could not learn by trying the routes (docs/DECISIONS.md "The HTTP
// sidecar"). Serialised once per app.

import { Type } from '@sinclair/typebox';
import { openApiDocument } from './openapi.ts';
import { defineRoute, type Route } from './route.ts';

/** The route serving the document of `described` and of itself (http/routes.ts lists both). */
export function openApiRouteOf(described: readonly Route[]): Route {
  const route: Route = defineRoute({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    tag: 'operations',
    summary: 'This document',
    description:
      'No auth, like /health: the document holds no secret and says nothing a caller could not learn by trying the routes. Not publicly routed.',
    auth: 'none',
    answers: {
      200: {
        description: 'the OpenAPI 3.1 description of this sidecar',
        schema: Type.Unsafe<Record<string, unknown>>({
          type: 'object',
          required: ['openapi', 'info', 'paths'],
          properties: { openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' } },
        }),
      },
    },
    refusals: [],
    handler: () => {
      const body = JSON.stringify(openApiDocument([...described, route]));
      return async ({ res }) => {
        res
          .writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
          .end(body);
      };
    },
  });
  return route;
}
