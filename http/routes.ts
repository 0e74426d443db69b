// Every route of the sidecar, in the order the OpenAPI document lists them: the app registers
// exactly these and the document describes exactly these.

import { entitiesMergeRoute } from './entities.ts';
import { extractRoute } from './extract.ts';
import { healthRoute } from './health.ts';
import { metricsRoute } from './metrics.ts';
import { openApiRouteOf } from './openapi-route.ts';
import { producerRunRoute } from './producer-run.ts';
import type { Route } from './route.ts';
import { stageRoute } from './stage.ts';
import { walkRoute, walkStatusRoute } from './walk.ts';

const SERVICE_ROUTES: readonly Route[] = [
  healthRoute,
  stageRoute,
  walkRoute,
  walkStatusRoute,
  extractRoute,
  producerRunRoute,
  entitiesMergeRoute,
  metricsRoute,
];

export const ROUTES: readonly Route[] = [...SERVICE_ROUTES, openApiRouteOf(SERVICE_ROUTES)];
