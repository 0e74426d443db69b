// POST /walk and GET /walk-status/{requestId} (docs/behaviour/routes.md#post-walk,
// docs/behaviour/states.md#walk-registry-entry). Order: auth -> rate limit -> single-flight (409)
// -> accepted (202 + requestId); then, in the background: the writer fence, one non-live pass,
// idle. The registry records exactly one terminal state per accepted walk.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FailStage5Mode, FailureDirective } from '../lib/failure-directive.ts';
import { SingleFlight } from '../lib/single-flight.ts';
import type { WalkRegistry } from './walk-registry.ts';
import type { EngineThread } from '../engine/thread-handle.ts';
import type { WalkFlags } from '../engine/walk.ts';
import type { Logger } from '../lib/log.ts';
import { readBooleanFields } from './body.ts';
import { HttpError, sendJson } from './errors.ts';

export interface WalkRouteDeps {
  engine: EngineThread;
  registry: WalkRegistry;
  directive: FailureDirective;
  log: Logger;
}

/** The body's field for each flag of a walk; anything else is refused by name. */
export const BODY_FLAGS = {
  full_reprocess: 'fullReprocess',
  allow_mass_removal: 'allowMassRemoval',
  rebind_corpus: 'rebindCorpus',
} as const satisfies Record<string, keyof WalkFlags>;

export function walkRoute(deps: WalkRouteDeps) {
  const walking = new SingleFlight(
    () =>
      new HttpError(409, 'walk_in_progress', 'a walk is already running; poll its status and try again when it ends'),
  );
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const flags: WalkFlags = await readBooleanFields(req, BODY_FLAGS);
    void walking.run(() => {
      const entry = deps.registry.accept();
      const failStage5 = deps.directive.consume();
      sendJson(res, 202, { requestId: entry.requestId });
      return walkInBackground(deps, entry.requestId, flags, failStage5);
    });
  };
}

/** Runs the accepted walk on the engine thread and records its one terminal state; never rejects. */
function walkInBackground(
  deps: WalkRouteDeps,
  requestId: string,
  flags: WalkFlags,
  failStage5: FailStage5Mode | null,
): Promise<void> {
  return deps.engine
    .walk(requestId, flags, failStage5, () => deps.registry.start(requestId))
    .then((done) => {
      const { state, opId, counts, stage5FailureInjected, stage5DirectiveConsumed, warnings } = done;
      deps.registry.finish(requestId, state, {
        ...(state === 'completed' && opId !== undefined ? { opId } : {}),
        ...(counts === undefined ? {} : { counts }),
        ...(stage5FailureInjected === undefined ? {} : { stage5FailureInjected }),
        ...(stage5DirectiveConsumed === undefined ? {} : { stage5DirectiveConsumed }),
        ...(warnings === undefined ? {} : { warnings }),
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
