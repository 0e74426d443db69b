// POST /entities/merge: the admin merge (docs/behaviour/states.md#curation-pins) for the platform's
// curation screens. Not publicly routed: loopback peers only, like /stage, and the bearer of
// PIPELINE_TRIGGER_SECRET. Body {"into": <mention id>, "mentions": [<mention id>, ...]}. It runs
// on the engine thread after any walk in progress, inside the writer fence.
//
// 200 {merged, mentions_pinned}; 200 {merged, mentions_pin_error} when the pin step failed
// after the merge committed (never a 5xx: the merge stands); 404 mention_not_found;
// 400 type_mismatch or a malformed body; 409 fence_busy; 503 merge_failed.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EngineThread } from '../engine/thread-handle.ts';
import type { MergeRequest } from '../stages/resolve/merge.ts';
import { readBody } from './body.ts';
import { HttpError, sendJson } from './errors.ts';
import { isLoopback } from './auth.ts';

export const MAX_MERGE_BODY = 64 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REFUSALS: Readonly<Record<string, number>> = { mention_not_found: 404, type_mismatch: 400, fence_busy: 409 };

async function mergeRequest(req: IncomingMessage): Promise<MergeRequest> {
  let body: unknown;
  try {
    body = JSON.parse((await readBody(req, MAX_MERGE_BODY)).toString('utf8'));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, 'invalid_json', 'the body is not valid JSON');
  }
  const { into, mentions, ...rest } = (body ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0)
    throw new HttpError(400, 'unknown_field', `unknown field ${unknown[0]}; the fields are into, mentions`);
  if (typeof into !== 'string' || !UUID.test(into))
    throw new HttpError(400, 'invalid_field', 'into must be a mention id');
  if (
    !Array.isArray(mentions) ||
    mentions.length === 0 ||
    !mentions.every((m) => typeof m === 'string' && UUID.test(m))
  )
    throw new HttpError(400, 'invalid_field', 'mentions must be a non-empty list of mention ids');
  return { into, mentions };
}

export function entitiesMergeRoute(engine: EngineThread) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!isLoopback(req.socket.remoteAddress))
      throw new HttpError(403, 'loopback_only', '/entities/merge accepts connections from loopback only');
    const done = await engine.merge(await mergeRequest(req));
    if (done.result !== undefined) return sendJson(res, 200, done.result);
    const { code, message } = done.error!;
    // Only the merge's own refusals are named to the caller; anything else (a database or disk
    // error that happens to carry a code) is the merge failing.
    const status = code === undefined ? undefined : REFUSALS[code];
    if (status === undefined) throw new HttpError(503, 'merge_failed', message);
    throw new HttpError(status, code!, message);
  };
}
