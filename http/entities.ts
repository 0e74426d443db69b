// POST /entities/merge: the admin merge (docs/behaviour/states.md#curation-pins) for the platform's
// curation screens. Not publicly routed: loopback peers only, like /stage, and the bearer of
// PIPELINE_TRIGGER_SECRET. Body {"into": <mention id>, "mentions": [<mention id>, ...]}. It runs
// on the engine thread after any walk in progress, inside the writer fence.
//
// 200 {merged, mentions_pinned}; 200 {merged, mentions_pin_error} when the pin step failed
// after the merge committed (never a 5xx: the merge stands); 404 mention_not_found;
// 400 type_mismatch or a malformed body; 409 fence_busy; 503 merge_failed.

import { Type, type Static } from '@sinclair/typebox';
import type { MergeResult } from '../stages/resolve/merge.ts';
import { jsonBody } from './body.ts';
import { HttpError } from './errors.ts';
import { defineRoute } from './route.ts';
import { uuid, type Same } from './schemas.ts';

const MAX_MERGE_BODY = 64 * 1024;
const REFUSALS: Readonly<Record<string, number>> = { mention_not_found: 404, type_mismatch: 400, fence_busy: 409 };

const MergeRequest = Type.Object(
  {
    into: Type.String({ format: 'uuid', title: 'a mention id', description: 'the mention whose canonical survives' }),
    mentions: Type.Array(uuid('a mention whose canonical merges into it'), {
      minItems: 1,
      title: 'a non-empty list of mention ids',
    }),
  },
  { $id: 'MergeRequest', additionalProperties: false, description: `At most ${MAX_MERGE_BODY} bytes.` },
);

const MergeResultSchema = Type.Object(
  {
    merged: Type.Integer({ minimum: 0, description: "mentions moved under the target's canonical" }),
    mentions_pinned: Type.Optional(
      Type.Integer({ minimum: 0, description: 'rows of the surviving canonical marked curation_pinned' }),
    ),
    mentions_pin_error: Type.Optional(
      Type.String({ description: 'the pin step failed after the merge committed; the merge stands (never a 5xx)' }),
    ),
  },
  {
    $id: 'MergeResult',
    additionalProperties: false,
    oneOf: [{ required: ['mentions_pinned'] }, { required: ['mentions_pin_error'] }],
  },
);
true satisfies Same<Static<typeof MergeResultSchema>, MergeResult>;

export const entitiesMergeRoute = defineRoute({
  method: 'POST',
  path: '/entities/merge',
  operationId: 'entitiesMerge',
  tag: 'entities',
  summary: 'Admin merge of entity mentions, then the curation pin',
  description:
    "Loopback peers only, and the bearer (not publicly routed). Runs on the engine thread after any walk in progress, inside the writer fence. The canonicals of `mentions` merge into `into`'s, in one transaction; then, apart, the surviving rows are pinned. A failed pin step is reported in the 200 body (mentions_pin_error), never as a 5xx: the merge stands.",
  auth: 'trigger',
  loopbackOnly: true,
  body: jsonBody(MergeRequest, { maxBytes: MAX_MERGE_BODY, required: true }),
  answers: { 200: { description: 'merged', schema: MergeResultSchema } },
  refusals: [
    { status: 400, error: 'type_mismatch', when: 'a mention of another entity type than the target' },
    { status: 404, error: 'mention_not_found', when: 'a mention id that names no mention' },
    {
      status: 409,
      error: 'fence_busy',
      when: 'another corpus writer holds the writer fence; retry when its walk ends',
    },
    {
      status: 503,
      error: 'merge_failed',
      when: 'the merge failed (the sidecar logged why), or the engine worker is not running',
    },
  ],
  handler:
    ({ engine }) =>
    async ({ body, send }) => {
      const done = await engine.merge(body);
      if (done.result !== undefined) return send(200, done.result);
      const { code, message } = done.error!;
      // Only the merge's own refusals are named to the caller; anything else (a database or disk
      // error that happens to carry a code) is the merge failing.
      const status = code === undefined ? undefined : REFUSALS[code];
      if (status === undefined) throw new HttpError(503, 'merge_failed', message);
      throw new HttpError(status, code!, message);
    },
});
