// POST /walk and GET /walk-status/{requestId} (SPEC.md 4, 3 "Walk registry entry").
// Order: auth -> rate limit -> single-flight (409) -> accepted (202 + requestId); then, in the
// background: the writer fence, one non-live pass, idle. The registry records exactly one
// terminal state per accepted walk.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FailStage5Mode, FailureDirective } from '../lib/failure-directive.ts';
import { SingleFlight } from '../lib/single-flight.ts';
import type { WalkRegistry } from './walk-registry.ts';
import type { EngineThread } from '../engine/thread-handle.ts';
import type { Logger } from '../lib/log.ts';
import { readBody } from './body.ts';
import { HttpError, sendJson } from './errors.ts';

export interface WalkRouteDeps {
  engine: EngineThread;
  registry: WalkRegistry;
  directive: FailureDirective;
  log: Logger;
}

const MAX_WALK_BODY = 4096;

async function fullReprocessFlag(req: IncomingMessage): Promise<boolean> {
  const body = (await readBody(req, MAX_WALK_BODY)).toString('utf8').trim();
  if (body === '') return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HttpError(400, 'invalid_json', 'the body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
  const unknown = Object.keys(parsed).filter((k) => k !== 'full_reprocess');
  if (unknown.length > 0)
    throw new HttpError(
      400,
      'unknown_field',
      `unknown field(s): ${unknown.join(', ')}; only full_reprocess is accepted`,
    );
  const flag = (parsed as { full_reprocess?: unknown }).full_reprocess;
  if (flag !== undefined && typeof flag !== 'boolean')
    throw new HttpError(400, 'invalid_field', 'full_reprocess must be a boolean');
  return flag === true;
}

export function walkRoute(deps: WalkRouteDeps) {
  const walking = new SingleFlight(
    () =>
      new HttpError(409, 'walk_in_progress', 'a walk is already running; poll its status and try again when it ends'),
  );
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const fullReprocess = await fullReprocessFlag(req);
    void walking.run(() => {
      const entry = deps.registry.accept();
      const failStage5 = deps.directive.consume();
      sendJson(res, 202, { requestId: entry.requestId });
      return walkInBackground(deps, entry.requestId, fullReprocess, failStage5);
    });
  };
}

/** Runs the accepted walk on the engine thread and records its one terminal state; never rejects. */
function walkInBackground(
  deps: WalkRouteDeps,
  requestId: string,
  fullReprocess: boolean,
  failStage5: FailStage5Mode | null,
): Promise<void> {
  return deps.engine
    .walk(requestId, fullReprocess, failStage5, () => deps.registry.start(requestId))
    .then((done) => {
      const { state, opId, counts, stage5FailureInjected } = done;
      deps.registry.finish(requestId, state, {
        ...(state === 'completed' && opId !== undefined ? { opId } : {}),
        ...(counts === undefined ? {} : { counts }),
        ...(stage5FailureInjected === undefined ? {} : { stage5FailureInjected }),
      });
      deps.log.info({ requestId, state, opId }, 'walk request finished');
    })
    .catch((error: unknown) => deps.log.error({ err: error, requestId }, 'walk bookkeeping failed'));
}

export function walkStatusRoute(registry: WalkRegistry) {
  return async (req: IncomingMessage & { params?: Record<string, string> }, res: ServerResponse): Promise<void> => {
    const entry = registry.get(req.params?.requestId ?? '');
    if (entry === undefined)
      throw new HttpError(404, 'unknown_request', 'no walk with this requestId (unknown, or evicted from the last 50)');
    sendJson(res, 200, entry);
  };
}
