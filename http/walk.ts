// POST /walk and GET /walk-status/{requestId} (docs/behaviour/routes.md#post-walk,
// docs/behaviour/states.md#walk-registry-entry). Order: auth -> rate limit -> body ->
// single-flight (409) -> accepted (202 + requestId); then, in the background: the writer fence,
// one non-live pass, idle. The registry records exactly one terminal state per accepted walk.

import { Type, type Static } from '@sinclair/typebox';
import type { FailStage5Mode } from '../lib/failure-directive.ts';
import { SingleFlight } from '../lib/single-flight.ts';
import type { WalkFlags } from '../engine/walk/walk-options.ts';
import { jsonBody, MAX_FLAGS_BODY } from './body.ts';
import { HttpError } from './errors.ts';
import { defineRoute, type AppDeps } from './route.ts';
import { REGISTRY_CAPACITY, type WalkEntry } from './walk-registry.ts';
import { failStage5Mode, uuid, type Same } from './schemas.ts';

/** The body's field for each flag of a walk. */
const BODY_FLAGS = {
  full_reprocess: 'fullReprocess',
  allow_mass_removal: 'allowMassRemoval',
  rebind_corpus: 'rebindCorpus',
  read_scans: 'readScans',
} as const satisfies Record<string, keyof WalkFlags>;

const flag = (description: string) => Type.Optional(Type.Boolean({ title: 'a boolean', description }));

const WalkRequest = Type.Object(
  {
    full_reprocess: flag('ignore the memo: re-extract every item'),
    allow_mass_removal: flag('allow this walk to remove more documents than the mass-removal guard lets a walk remove'),
    rebind_corpus: flag("the corpus really moved: bind the engine state store to this walk's corpus root"),
    read_scans: flag(
      'also reprocess the PDFs whose pages without words were left unread (walked with OCR off, or before OCR)',
    ),
  },
  {
    $id: 'WalkRequest',
    additionalProperties: false,
    description: `Each field optional; an empty body is the same as {}. At most ${MAX_FLAGS_BODY} bytes.`,
  },
);
true satisfies Same<keyof Static<typeof WalkRequest>, keyof typeof BODY_FLAGS>;

const WalkAccepted = Type.Object(
  { requestId: uuid('poll GET /walk-status/{requestId} with it') },
  { $id: 'WalkAccepted', additionalProperties: false },
);

export const walkRoute = defineRoute({
  method: 'POST',
  path: '/walk',
  operationId: 'walk',
  tag: 'walk',
  summary: 'Start one walk of the corpus',
  description:
    'Single-flight: one walk at a time. Accepted walks run in the background: the writer fence, pull-sync from the corpus bucket, one pass, then idle; poll GET /walk-status/{requestId} for the outcome. An armed failStage5 directive is consumed by the walk accepted next. Publicly routed.',
  auth: 'trigger',
  rateLimit: 'walk',
  body: jsonBody(WalkRequest, { maxBytes: MAX_FLAGS_BODY, required: false }),
  answers: { 202: { description: 'accepted', schema: WalkAccepted } },
  refusals: [
    { status: 409, error: 'walk_in_progress', when: 'a walk is running; poll its status and retry when it ends' },
  ],
  handler: (deps) => {
    const walking = new SingleFlight(
      () =>
        new HttpError(409, 'walk_in_progress', 'a walk is already running; poll its status and try again when it ends'),
    );
    return async ({ body, send }) => {
      const flags: WalkFlags = {};
      for (const [field, name] of Object.entries(BODY_FLAGS)) {
        const value = body[field as keyof typeof BODY_FLAGS];
        if (value !== undefined) flags[name] = value;
      }
      void walking.run(() => {
        const entry = deps.registry.accept();
        const failStage5 = deps.directive.consume();
        send(202, { requestId: entry.requestId });
        return walkInBackground(deps, entry.requestId, flags, failStage5);
      });
    };
  },
});

/** Runs the accepted walk on the engine thread and records its one terminal state; never rejects. */
function walkInBackground(
  deps: AppDeps,
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

const timestamp = (description: string) => Type.String({ format: 'date-time', description });

const RunWarningSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'snake_case, stable' }),
    message: Type.String({ description: 'for people' }),
    path: Type.Optional(Type.String({ description: 'the corpus-relative path of the item a warning concerns' })),
  },
  { additionalProperties: false },
);

const WalkEntrySchema = Type.Object(
  {
    requestId: uuid('the id POST /walk answered with'),
    state: Type.Union(
      [
        Type.Literal('accepted'),
        Type.Literal('running'),
        Type.Literal('completed'),
        Type.Literal('failed'),
        Type.Literal('fence_busy'),
      ],
      {
        description:
          'accepted -> running -> exactly one terminal state: completed, failed, or fence_busy (another corpus writer held the writer fence; no pass ran)',
      },
    ),
    acceptedAt: timestamp('when POST /walk accepted the walk'),
    finishedAt: Type.Optional(timestamp('when it reached its terminal state')),
    opId: Type.Optional(uuid("the walk's pipeline_runs op_id; present once it completed")),
    stage5FailureInjected: Type.Optional(failStage5Mode('the failStage5 mode stage 5 ran under, when it ran')),
    stage5DirectiveConsumed: Type.Optional(
      failStage5Mode(
        'the failStage5 mode this walk consumed, whether or not stage 5 ran (a fence_busy walk consumes it too)',
      ),
    ),
    counts: Type.Optional(
      Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
        description:
          "the run record's counts: items (seen, changed, unchanged, failed, dropped, skipped, removed), rows_<table>, rows_deleted, sync_<field> with a corpus bucket, <pass>_<count> of the stage-5 passes",
      }),
    ),
    warnings: Type.Optional(
      Type.Array(RunWarningSchema, {
        description:
          'named warnings of a walk that completed (a refused mass removal, a folder it could not list, links leading outside the corpus, a failed stage-5 pass), ' +
          'and warnings about one document with its path (encoding_fallback, replacement_characters, no_text_layer)',
      }),
    ),
  },
  { $id: 'WalkEntry', additionalProperties: false },
);
true satisfies Same<Static<typeof WalkEntrySchema>, WalkEntry>;

export const walkStatusRoute = defineRoute({
  method: 'GET',
  path: '/walk-status/{requestId}',
  operationId: 'walkStatus',
  tag: 'walk',
  summary: "A walk's registry entry",
  description: `The registry keeps the last ${REGISTRY_CAPACITY} accepted walks; the oldest are evicted. It is observability, not a ledger: pipeline_runs is.`,
  auth: 'trigger',
  rateLimit: 'walkStatus',
  params: Type.Object({ requestId: Type.String({ description: 'the requestId POST /walk answered with' }) }),
  answers: { 200: { description: 'the entry', schema: WalkEntrySchema } },
  refusals: [
    {
      status: 404,
      error: 'unknown_request',
      when: `no walk with this requestId: unknown, or evicted from the last ${REGISTRY_CAPACITY}`,
    },
  ],
  handler:
    ({ registry }) =>
    async ({ params, send }) => {
      const entry = registry.get(params.requestId);
      if (entry === undefined)
        throw new HttpError(
          404,
          'unknown_request',
          `no walk with this requestId (unknown, or evicted from the last ${REGISTRY_CAPACITY})`,
        );
      send(200, entry);
    },
});
