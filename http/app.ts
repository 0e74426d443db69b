// The sidecar's routes (docs/behaviour/routes.md) on polka: each route file holds its handler; this
// file puts auth and rate limits in front of them and turns every thrown HttpError into the one
// error body. Anything else thrown is logged and answered 500 without its message.

import type { IncomingMessage, ServerResponse } from 'node:http';
import polka from 'polka';
import type { Config } from '../lib/config.ts';
import type { FailureDirective } from '../lib/failure-directive.ts';
import type { WalkRegistry } from './walk-registry.ts';
import type { EngineThread } from '../engine/thread-handle.ts';
import type { Logger } from '../lib/log.ts';
import { requireBearer } from './auth.ts';
import { HttpError, sendError } from './errors.ts';
import { extractRoute } from './extract.ts';
import type { ExtractPool } from './extract-pool.ts';
import { healthRoute } from './health.ts';
import { openApiRoute } from './openapi-route.ts';
import { producerRunRoute } from './producer-run.ts';
import { authFailureLimit, clientOf, perMinute, type RateLimit } from './rate-limit.ts';
import { stageRoute } from './stage.ts';
import { openBucket } from '../lib/bucket/index.ts';
import { walkRoute, walkStatusRoute } from './walk.ts';
import { entitiesMergeRoute } from './entities.ts';
import { metricsRoute } from './metrics.ts';

export interface AppDeps {
  config: Config;
  log: Logger;
  engine: EngineThread;
  registry: WalkRegistry;
  directive: FailureDirective;
  extractPool: ExtractPool;
}

type Handler = (req: IncomingMessage & { params?: Record<string, string> }, res: ServerResponse) => Promise<void>;

interface Guard {
  secret: string | null;
  secretName: string;
  disabledError: string;
  limit?: RateLimit;
}

export function createApp(deps: AppDeps) {
  const { config, log } = deps;
  const authFailures = authFailureLimit(config.rateLimits.authFailures);
  const handle = (handler: Handler, guard?: Guard) => (req: IncomingMessage, res: ServerResponse) => {
    const run = async () => {
      if (guard !== undefined) {
        const client = clientOf(req, config.rateLimits.trustedProxyHeader);
        await authFailures.check(client);
        try {
          requireBearer(req, guard.secret, guard.disabledError, guard.secretName);
        } catch (error) {
          if (error instanceof HttpError && error.status === 401) await authFailures.failed(client);
          throw error;
        }
        await guard.limit?.(client);
      }
      await handler(req, res);
    };
    run().catch((error: unknown) => {
      if (res.headersSent) return;
      if (error instanceof HttpError) return sendError(res, error);
      log.error({ err: error, path: req.url }, 'request failed');
      sendError(res, new HttpError(500, 'internal_error', 'the request failed; the sidecar logged why'));
    });
  };
  const trigger = (limit?: RateLimit): Guard => ({
    secret: config.secrets.pipelineTrigger,
    secretName: 'PIPELINE_TRIGGER_SECRET',
    disabledError: 'trigger_disabled',
    ...(limit ? { limit } : {}),
  });
  return polka({
    onNoMatch: (req, res) =>
      sendError(res, new HttpError(404, 'not_found', `no route ${req.method} ${req.url?.split('?')[0]}`)),
  })
    .get('/health', handle(healthRoute(deps.engine)) as never)
    .get('/metrics', handle(metricsRoute(deps.engine, config.metricsToken)) as never)
    .get('/openapi.json', handle(openApiRoute()) as never)
    .post(
      '/stage',
      handle(
        stageRoute({
          corpus: config.sourcePath,
          stateDir: config.stateStorePath,
          maxBytes: config.convert.maxDocumentBytes,
          directive: deps.directive,
          bucket: openBucket(config, deps.log),
        }),
      ) as never,
    )
    .post('/walk', handle(walkRoute(deps), trigger(perMinute(config.rateLimits.walk))) as never)
    .get(
      '/walk-status/:requestId',
      handle(walkStatusRoute(deps.registry), trigger(perMinute(config.rateLimits.walkStatus))) as never,
    )
    .post(
      '/extract',
      handle(extractRoute(deps.extractPool), {
        secret: config.secrets.extractApiToken,
        secretName: 'EXTRACT_API_TOKEN',
        disabledError: 'extract_disabled',
        limit: perMinute(config.rateLimits.extract),
      }) as never,
    )
    .post(
      '/producer-run',
      handle(producerRunRoute(deps.engine), trigger(perMinute(config.rateLimits.producerRun))) as never,
    )
    .post('/entities/merge', handle(entitiesMergeRoute(deps.engine), trigger()) as never);
}
