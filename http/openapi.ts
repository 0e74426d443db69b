// The sidecar's HTTP surface as an OpenAPI 3.1 document (SPEC.md 4, 5, 7; DESIGN.md 10), served
// at GET /openapi.json. It is built from what the routes themselves use, so it cannot quietly
// drift from them: the body fields of /walk and /producer-run are the routes' own field maps,
// the size caps and the failStage5 modes are the routes' constants, and each success body is a
// TypeBox schema whose static type must equal the type the route answers with (the `satisfies
// Same<...>` lines fail the typecheck otherwise). test/openapi.test.ts then holds the document
// to the running sidecar: every registered route documented and nothing else, every error name
// the code throws listed under its status, and every answer it can provoke valid against it.
//
// Each refusal is listed once per route (status, error name, when); the document groups them by
// status into one response whose body schema enumerates the error names that status carries.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { FAIL_STAGE5_MODES } from '../lib/failure-directive.ts';
import type { CleanedHtml } from '../stages/convert/html/index.ts';
import type { MergeResult } from '../stages/resolve/merge.ts';
import { MAX_FLAGS_BODY } from './body.ts';
import { MAX_MERGE_BODY } from './entities.ts';
import { EXTRACT_MAX_BYTES } from './extract.ts';
import { PRODUCER_RUN_FLAGS } from './producer-run.ts';
import { REGISTRY_CAPACITY, type WalkEntry } from './walk-registry.ts';
import { BODY_FLAGS as WALK_BODY_FLAGS } from './walk.ts';

/** The version of this description; test/openapi.test.ts holds it equal to package.json's. */
export const API_VERSION = '0.1.0';

type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

const uuid = (description: string) => Type.String({ format: 'uuid', description });
const timestamp = (description: string) => Type.String({ format: 'date-time', description });
const modeEnum = (description: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...FAIL_STAGE5_MODES], description });

// ---- bodies ---------------------------------------------------------------------------------

const RunWarning = Type.Object(
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
    stage5FailureInjected: Type.Optional(modeEnum('the failStage5 mode stage 5 ran under, when it ran')),
    stage5DirectiveConsumed: Type.Optional(
      modeEnum(
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
      Type.Array(RunWarning, {
        description:
          'named warnings of a walk that completed (a refused mass removal, a folder it could not list, links leading outside the corpus, a failed stage-5 pass), ' +
          'and warnings about one document with its path (encoding_fallback, replacement_characters, no_text_layer)',
      }),
    ),
  },
  { additionalProperties: false },
);
true satisfies Same<Static<typeof WalkEntrySchema>, WalkEntry>;

const WALK_FLAG_DESCRIPTIONS = {
  full_reprocess: 'ignore the memo: re-extract every item',
  allow_mass_removal: 'allow this walk to remove more documents than the mass-removal guard lets a walk remove',
  rebind_corpus: "the corpus really moved: bind the engine state store to this walk's corpus root",
} as const satisfies Record<keyof typeof WALK_BODY_FLAGS, string>;

const WalkRequestSchema = Type.Object(
  Object.fromEntries(
    Object.keys(WALK_BODY_FLAGS).map((field) => [
      field,
      Type.Optional(Type.Boolean({ description: WALK_FLAG_DESCRIPTIONS[field as keyof typeof WALK_BODY_FLAGS] })),
    ]),
  ),
  {
    additionalProperties: false,
    description: `Each field optional; an empty body is the same as {}. At most ${MAX_FLAGS_BODY} bytes.`,
  },
);

const WalkAcceptedSchema = Type.Object(
  { requestId: uuid('poll GET /walk-status/{requestId} with it') },
  { additionalProperties: false },
);

const StageRequestSchema = Type.Object(
  {
    destPath: Type.String({
      description:
        'Corpus-relative file path ("/"-separated; no absolute path, "..", empty or "." segment, hidden segment, backslash, NUL, or percent-encoded dot or separator). ' +
        `A "?" suffix is refused unless it is the one directive ?failStage5=<${FAIL_STAGE5_MODES.join('|')}>, which is stripped and armed for the next walk. "#" and other punctuation are part of the name.`,
    }),
    file: Type.String({
      contentMediaType: 'application/octet-stream',
      description: 'the bytes to write; at most INGEST_MAX_DOCUMENT_BYTES',
    }),
  },
  { description: 'multipart/form-data: the destPath field and one file part' },
);

const StageResultSchema = Type.Object(
  {
    path: Type.String({ description: 'the corpus-relative path written (the directive stripped)' }),
    bytes: Type.Integer({ minimum: 0, description: 'bytes written' }),
    failStage5: Type.Optional(modeEnum('the directive armed for the next walk, when destPath carried one')),
  },
  { additionalProperties: false },
);

const ExtractRequestSchema = Type.Object(
  {
    html: Type.String({ description: 'the page' }),
    url: Type.Optional(Type.String({ description: 'where the page came from; never fetched' })),
  },
  { description: 'the JSON form; other fields are ignored' },
);

const ExtractResultSchema = Type.Object(
  {
    text: Type.String({ description: 'the main content as readable plain text (Markdown-ish headings and lists)' }),
    verdict: Type.Union([Type.Literal('ok'), Type.Literal('thin'), Type.Literal('empty'), Type.Literal('not_html')], {
      description: 'how much to trust text (docs/DECISIONS.md "HTML cleaner")',
    }),
    warnings: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), {
      description: 'snake_case names: e.g. truncated, no_main_block, mostly_links, forum_page',
    }),
  },
  { additionalProperties: false },
);
true satisfies Same<Static<typeof ExtractResultSchema>, Pick<CleanedHtml, 'text' | 'verdict' | 'warnings'>>;

const ProducerRunRequestSchema = Type.Object(
  Object.fromEntries(
    Object.keys(PRODUCER_RUN_FLAGS).map((field) => [
      field,
      Type.Optional(Type.Boolean({ description: 'ask the model again even where the memo holds a draft' })),
    ]),
  ),
  {
    additionalProperties: false,
    description: `Optional; an empty body is the same as {}. At most ${MAX_FLAGS_BODY} bytes.`,
  },
);

const ProducerRunAcceptedSchema = Type.Object(
  {
    op_id: uuid("the run's pipeline_runs op_id (flow producer); its row records how the run ends"),
    status: Type.Literal('accepted'),
  },
  { additionalProperties: false },
);

const MergeRequestSchema = Type.Object(
  {
    into: uuid('the mention whose canonical survives'),
    mentions: Type.Array(uuid('a mention whose canonical merges into it'), { minItems: 1 }),
  },
  { additionalProperties: false, description: `At most ${MAX_MERGE_BODY} bytes.` },
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
  { additionalProperties: false, oneOf: [{ required: ['mentions_pinned'] }, { required: ['mentions_pin_error'] }] },
);
true satisfies Same<Static<typeof MergeResultSchema>, MergeResult>;

/** The one error body (DESIGN.md 10), its `error` limited to `names`. */
function errorBody(names: readonly string[], validModes: boolean): TSchema {
  return Type.Object(
    {
      error: Type.Unsafe<string>({ type: 'string', enum: [...names], description: 'the snake_case name; stable' }),
      message: Type.String({ description: 'for people; may change' }),
      ...(validModes
        ? {
            valid_modes: Type.Unsafe<string[]>({
              type: 'array',
              items: { type: 'string' },
              const: [...FAIL_STAGE5_MODES],
              description: 'the failStage5 modes',
            }),
          }
        : {}),
    },
    { additionalProperties: false },
  );
}

// ---- refusals -------------------------------------------------------------------------------

type ErrorHeader = 'Retry-After' | 'WWW-Authenticate';

/** One named refusal a route answers: its status, the error body's `error`, and when. */
export interface Refusal {
  status: number;
  error: string;
  when: string;
  /** Headers this refusal always carries. */
  headers?: readonly ErrorHeader[];
  /** The body also carries valid_modes (the /stage directive errors). */
  validModes?: true;
}

const INTERNAL: Refusal = {
  status: 500,
  error: 'internal_error',
  when: 'a fault the code does not foresee; the sidecar logged why and the message does not say',
};

const AUTH_FAILURES =
  'more than INGEST_RATE_LIMIT_AUTH_FAILURES failed authentications a minute from this client (checked before the bearer, so a right bearer is refused too until the window passes)';

/** The bearer in front of a route (http/app.ts): closed when unset, 401, 429. */
function bearer(disabledError: string, secretName: string, limitKnob: string | null): Refusal[] {
  return [
    {
      status: 503,
      error: disabledError,
      when: `${secretName} is not set on this sidecar: the route is closed (fail closed)`,
    },
    {
      status: 401,
      error: 'unauthorized',
      when: `the bearer is missing or is not ${secretName}`,
      headers: ['WWW-Authenticate'],
    },
    {
      status: 429,
      error: 'rate_limited',
      when:
        limitKnob === null
          ? AUTH_FAILURES
          : `more than ${limitKnob} requests a minute from this client, or ${AUTH_FAILURES}`,
      headers: ['Retry-After'],
    },
  ];
}
const trigger = (limitKnob: string | null) => bearer('trigger_disabled', 'PIPELINE_TRIGGER_SECRET', limitKnob);

/** The small JSON bodies of named boolean fields (http/body.ts readBooleanFields). */
function flagsBody(fields: readonly string[]): Refusal[] {
  return [
    { status: 400, error: 'invalid_json', when: 'the body is not JSON' },
    { status: 400, error: 'invalid_body', when: 'the body is JSON but not an object' },
    { status: 400, error: 'unknown_field', when: `a field other than ${fields.join(', ')}` },
    { status: 400, error: 'invalid_field', when: 'a field that is not a boolean' },
    { status: 413, error: 'body_too_large', when: `the body is over ${MAX_FLAGS_BODY} bytes` },
  ];
}

const loopbackOnly = (route: string): Refusal => ({
  status: 403,
  error: 'loopback_only',
  when: `the peer is not on loopback (127.0.0.0/8, ::1, their IPv4-mapped forms): ${route} is not publicly routed`,
});

// ---- the document ---------------------------------------------------------------------------

type Json = Record<string, unknown>;
type Security = 'none' | 'trigger' | 'extract' | 'metrics';

interface Route {
  method: 'get' | 'post';
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  security: Security;
  /** The per-minute rate limit's knob, when the route has one. */
  rateLimit?: string;
  loopbackOnly?: true;
  parameters?: Json[];
  requestBody?: Json;
  answers: Record<string, Json>;
  refusals: Refusal[];
}

const json = (schema: TSchema | Json) => ({ 'application/json': { schema } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const SCHEMAS: Record<string, TSchema> = {
  WalkRequest: WalkRequestSchema,
  WalkAccepted: WalkAcceptedSchema,
  WalkEntry: WalkEntrySchema,
  StageRequest: StageRequestSchema,
  StageResult: StageResultSchema,
  ExtractRequest: ExtractRequestSchema,
  ExtractResult: ExtractResultSchema,
  ProducerRunRequest: ProducerRunRequestSchema,
  ProducerRunAccepted: ProducerRunAcceptedSchema,
  MergeRequest: MergeRequestSchema,
  MergeResult: MergeResultSchema,
  Error: Type.Object(
    {
      error: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'the snake_case name; stable' }),
      message: Type.String({ description: 'for people; may change' }),
      valid_modes: Type.Optional(Type.Array(Type.String(), { description: '/stage directive errors only' })),
    },
    { description: 'The one error body. Each response below narrows `error` to the names it can carry.' },
  ),
};

const ROUTES: Route[] = [
  {
    method: 'get',
    path: '/health',
    operationId: 'health',
    tag: 'operations',
    summary: 'Liveness of the engine worker thread',
    description:
      'No body either way. Publicly routed. On platform hosts it sits behind the edge access token; the sidecar itself asks for nothing.',
    security: 'none',
    answers: {
      '200': { description: 'the engine worker thread is alive' },
      '503': { description: 'the engine worker thread died (a crash); restart the sidecar' },
    },
    refusals: [INTERNAL],
  },
  {
    method: 'post',
    path: '/stage',
    operationId: 'stage',
    tag: 'corpus',
    summary: 'Drop one file into the corpus',
    description:
      'Loopback peers only, no bearer (not publicly routed). The bytes land atomically (a hidden temp file, then a rename) and, with a corpus bucket configured, go to the bucket first. Staging never waits for a walk. Every refusal writes nothing.',
    security: 'none',
    loopbackOnly: true,
    requestBody: {
      required: true,
      content: { 'multipart/form-data': { schema: ref('StageRequest') } },
    },
    answers: { '201': { description: 'written', content: json(ref('StageResult')) } },
    refusals: [
      loopbackOnly('/stage'),
      {
        status: 503,
        error: 'no_corpus',
        when: 'ENGINE_SOURCE_PATH is not set (idle mode): there is nowhere to stage',
      },
      { status: 400, error: 'not_multipart', when: 'the body is not multipart/form-data' },
      { status: 400, error: 'bad_multipart', when: 'the multipart body cannot be read' },
      { status: 400, error: 'dest_path_missing', when: 'no destPath field, or an empty one' },
      {
        status: 400,
        error: 'dest_path_invalid',
        when: 'destPath could leave the corpus or names a hidden file (the rules under StageRequest.destPath)',
      },
      { status: 400, error: 'file_missing', when: 'no file part' },
      { status: 400, error: 'unknown_suffix', when: 'a "?" suffix other than ?failStage5', validModes: true },
      { status: 400, error: 'directive_without_path', when: 'a "?" suffix with no path before it', validModes: true },
      { status: 400, error: 'directive_missing_value', when: '?failStage5 without =<mode>', validModes: true },
      { status: 400, error: 'unknown_mode', when: '?failStage5=<mode> with an unknown mode', validModes: true },
      { status: 413, error: 'file_too_large', when: 'the file part is over INGEST_MAX_DOCUMENT_BYTES' },
      {
        status: 502,
        error: 'bucket_write_failed',
        when: 'the corpus bucket did not take the file; nothing was written locally',
      },
      INTERNAL,
    ],
  },
  {
    method: 'post',
    path: '/walk',
    operationId: 'walk',
    tag: 'walk',
    summary: 'Start one walk of the corpus',
    description:
      'Single-flight: one walk at a time. Accepted walks run in the background: the writer fence, pull-sync from the corpus bucket, one pass, then idle; poll GET /walk-status/{requestId} for the outcome. An armed failStage5 directive is consumed by the walk accepted next. Publicly routed.',
    security: 'trigger',
    rateLimit: 'INGEST_RATE_LIMIT_WALK',
    requestBody: { required: false, content: json(ref('WalkRequest')) },
    answers: { '202': { description: 'accepted', content: json(ref('WalkAccepted')) } },
    refusals: [
      ...trigger('INGEST_RATE_LIMIT_WALK'),
      ...flagsBody(Object.keys(WALK_BODY_FLAGS)),
      { status: 409, error: 'walk_in_progress', when: 'a walk is running; poll its status and retry when it ends' },
      INTERNAL,
    ],
  },
  {
    method: 'get',
    path: '/walk-status/{requestId}',
    operationId: 'walkStatus',
    tag: 'walk',
    summary: "A walk's registry entry",
    description: `The registry keeps the last ${REGISTRY_CAPACITY} accepted walks; the oldest are evicted. It is observability, not a ledger: pipeline_runs is.`,
    security: 'trigger',
    rateLimit: 'INGEST_RATE_LIMIT_WALK_STATUS',
    parameters: [
      {
        name: 'requestId',
        in: 'path',
        required: true,
        description: 'the requestId POST /walk answered with',
        schema: { type: 'string' },
      },
    ],
    answers: { '200': { description: 'the entry', content: json(ref('WalkEntry')) } },
    refusals: [
      ...trigger('INGEST_RATE_LIMIT_WALK_STATUS'),
      {
        status: 404,
        error: 'unknown_request',
        when: `no walk with this requestId: unknown, or evicted from the last ${REGISTRY_CAPACITY}`,
      },
      INTERNAL,
    ],
  },
  {
    method: 'post',
    path: '/extract',
    operationId: 'extract',
    tag: 'extract',
    summary: 'Clean one HTML page into text',
    description: `HTML in, its main content as text out, through the same cleaner as the walk. No fetch is ever performed. Send the page as text/html (or application/xhtml+xml) bytes, so a meta charset is honoured, or as JSON. At most ${EXTRACT_MAX_BYTES} bytes (20 MB), refused as soon as the cap is crossed. Publicly routed.`,
    security: 'extract',
    rateLimit: 'INGEST_RATE_LIMIT_EXTRACT',
    requestBody: {
      required: true,
      content: {
        'text/html': { schema: { type: 'string' } },
        'application/xhtml+xml': { schema: { type: 'string' } },
        ...json(ref('ExtractRequest')),
      },
    },
    answers: { '200': { description: 'the cleaned page', content: json(ref('ExtractResult')) } },
    refusals: [
      ...bearer('extract_disabled', 'EXTRACT_API_TOKEN', 'INGEST_RATE_LIMIT_EXTRACT'),
      {
        status: 503,
        error: 'extract_busy',
        when: 'every extract thread is busy and the queue (INGEST_EXTRACT_QUEUE) is full; retry after Retry-After',
        headers: ['Retry-After'],
      },
      {
        status: 415,
        error: 'unsupported_media_type',
        when: 'a content type other than text/html, application/xhtml+xml, application/json',
      },
      { status: 400, error: 'invalid_json', when: 'an application/json body that is not JSON' },
      { status: 400, error: 'html_missing', when: 'a JSON body without an "html" string' },
      { status: 413, error: 'body_too_large', when: `the body is over ${EXTRACT_MAX_BYTES} bytes` },
      INTERNAL,
    ],
  },
  {
    method: 'post',
    path: '/producer-run',
    operationId: 'producerRun',
    tag: 'producer',
    summary: 'Force a producer run over every concept',
    description:
      "Bypasses the post-walk delta gate. The producer has its own lock, independent of the walk's. The answer comes once the run holds its locks; the run goes on in the background and its pipeline_runs row (flow producer) records how it ends.",
    security: 'trigger',
    rateLimit: 'INGEST_RATE_LIMIT_PRODUCER_RUN',
    requestBody: { required: false, content: json(ref('ProducerRunRequest')) },
    answers: { '202': { description: 'started', content: json(ref('ProducerRunAccepted')) } },
    refusals: [
      ...trigger('INGEST_RATE_LIMIT_PRODUCER_RUN'),
      ...flagsBody(Object.keys(PRODUCER_RUN_FLAGS)),
      { status: 409, error: 'producer_in_progress', when: 'another producer run holds the lock' },
      {
        status: 503,
        error: 'producer_unavailable',
        when: 'the run could not start (the engine worker is not running, or the producer failed to open)',
      },
      INTERNAL,
    ],
  },
  {
    method: 'post',
    path: '/entities/merge',
    operationId: 'entitiesMerge',
    tag: 'entities',
    summary: 'Admin merge of entity mentions, then the curation pin',
    description:
      "Loopback peers only, and the bearer (not publicly routed). Runs on the engine thread after any walk in progress, inside the writer fence. The canonicals of `mentions` merge into `into`'s, in one transaction; then, apart, the surviving rows are pinned. A failed pin step is reported in the 200 body (mentions_pin_error), never as a 5xx: the merge stands.",
    security: 'trigger',
    loopbackOnly: true,
    requestBody: { required: true, content: json(ref('MergeRequest')) },
    answers: { '200': { description: 'merged', content: json(ref('MergeResult')) } },
    refusals: [
      ...trigger(null),
      loopbackOnly('/entities/merge'),
      { status: 400, error: 'invalid_json', when: 'the body is not JSON' },
      { status: 400, error: 'unknown_field', when: 'a field other than into, mentions' },
      {
        status: 400,
        error: 'invalid_field',
        when: 'into is not a mention id, or mentions is not a non-empty list of mention ids',
      },
      { status: 400, error: 'type_mismatch', when: 'a mention of another entity type than the target' },
      { status: 404, error: 'mention_not_found', when: 'a mention id that names no mention' },
      {
        status: 409,
        error: 'fence_busy',
        when: 'another corpus writer holds the writer fence; retry when its walk ends',
      },
      { status: 413, error: 'body_too_large', when: `the body is over ${MAX_MERGE_BODY} bytes` },
      {
        status: 503,
        error: 'merge_failed',
        when: 'the merge failed (the sidecar logged why), or the engine worker is not running',
      },
      INTERNAL,
    ],
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    tag: 'operations',
    summary: 'Prometheus metrics',
    description:
      'The Prometheus text exposition (format 0.0.4); each family carries its HELP line. Not publicly routed. A loopback peer is answered without a token; any other peer needs the bearer INGEST_METRICS_TOKEN, and with INGEST_METRICS_TOKEN unset it is refused.',
    security: 'metrics',
    answers: {
      '200': {
        description: 'the metrics',
        content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } },
      },
    },
    refusals: [
      {
        status: 401,
        error: 'unauthorized',
        when: 'a peer off loopback without the bearer INGEST_METRICS_TOKEN (set)',
        headers: ['WWW-Authenticate'],
      },
      {
        status: 403,
        error: 'loopback_only',
        when: 'a peer off loopback while INGEST_METRICS_TOKEN is unset',
      },
      INTERNAL,
    ],
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'openapi',
    tag: 'operations',
    summary: 'This document',
    description:
      'No auth, like /health: the document holds no secret and says nothing a caller could not learn by trying the routes. Not publicly routed.',
    security: 'none',
    answers: {
      '200': {
        description: 'the OpenAPI 3.1 description of this sidecar',
        content: json({
          type: 'object',
          required: ['openapi', 'info', 'paths'],
          properties: { openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' } },
        }),
      },
    },
    refusals: [INTERNAL],
  },
];

const HEADERS: Record<ErrorHeader, Json> = {
  'Retry-After': {
    description: 'seconds to wait before trying again',
    schema: { type: 'integer', minimum: 1 },
  },
  'WWW-Authenticate': { description: 'the scheme to authenticate with', schema: { type: 'string', const: 'Bearer' } },
};

const SECURITY: Record<Security, Json[]> = {
  none: [],
  trigger: [{ pipelineTrigger: [] }],
  extract: [{ extractToken: [] }],
  // Anonymous on loopback, the bearer from anywhere else.
  metrics: [{}, { metricsToken: [] }],
};

/** The refusals of one status as one response: its description, headers and error body. */
function refusalResponse(refusals: readonly Refusal[]): Json {
  const names = (modes: boolean) =>
    [...new Set(refusals.filter((r) => (r.validModes === true) === modes).map((r) => r.error))].sort();
  const bodies = [false, true]
    .filter((modes) => names(modes).length > 0)
    .map((modes) => errorBody(names(modes), modes));
  const headers: Json = {};
  for (const name of new Set(refusals.flatMap((r) => r.headers ?? [])))
    headers[name] = { ...HEADERS[name], required: refusals.every((r) => r.headers?.includes(name)) };
  return {
    description: [...new Set(refusals.map((r) => `- \`${r.error}\`: ${r.when}`))].join('\n'),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    content: json(bodies.length === 1 ? bodies[0]! : { anyOf: bodies }),
  };
}

function operation(route: Route): Json {
  const byStatus = new Map<number, Refusal[]>();
  for (const refusal of route.refusals)
    byStatus.set(refusal.status, [...(byStatus.get(refusal.status) ?? []), refusal]);
  const responses: Json = { ...route.answers };
  for (const [status, refusals] of [...byStatus].sort(([a], [b]) => a - b)) {
    // One status is either an answer or a refusal, never both.
    if (responses[String(status)] !== undefined)
      throw new Error(`${route.method} ${route.path}: status ${status} is both an answer and a refusal`);
    responses[String(status)] = refusalResponse(refusals);
  }
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    description: route.description,
    security: SECURITY[route.security],
    ...(route.parameters ? { parameters: route.parameters } : {}),
    ...(route.requestBody ? { requestBody: route.requestBody } : {}),
    responses,
    ...(route.loopbackOnly ? { 'x-loopback-only': true } : {}),
    ...(route.rateLimit ? { 'x-rate-limit': { knob: route.rateLimit, per: 'minute', counted: 'per client' } } : {}),
  };
}

function buildDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const route of ROUTES) paths[route.path] = { ...paths[route.path], [route.method]: operation(route) };
  return {
    openapi: '3.1.0',
    info: {
      title: 'ingest sidecar',
      version: API_VERSION,
      description: [
        'The ingestion sidecar of `ingest serve` (SPEC.md 4, 5, 7; DESIGN.md 10).',
        '',
        'Every error is one body, `{"error": "<snake_case_name>", "message": "..."}` (plus `valid_modes` on the /stage directive errors); each response lists the names it can carry. The name is stable, the message is for people. Every JSON answer is sent with `Cache-Control: no-store`.',
        '',
        'A method and path not listed here is answered 404 `not_found` (components.responses.NoRoute).',
        '',
        'Auth: a bearer per route group, compared in constant time; a route whose secret is unset answers 503 `*_disabled` (fail closed); a missing or wrong bearer is 401 with `WWW-Authenticate: Bearer`. Rate limits are per client and per minute, 429 with `Retry-After`; failed authentications have a limit of their own on every route with a bearer. The client is the socket peer, or the last address of INGEST_TRUSTED_PROXY_HEADER when that is set.',
        '',
        'The public proxy routes only /walk, /health and /extract; everything else is reached on loopback or inside the container.',
      ].join('\n'),
    },
    tags: [
      { name: 'walk', description: 'walks of the corpus and their registry' },
      { name: 'corpus', description: 'staging files into the corpus' },
      { name: 'extract', description: 'HTML cleaning on demand' },
      { name: 'producer', description: 'the knowledge-bundle producer' },
      { name: 'entities', description: 'curation of entity mentions' },
      { name: 'operations', description: 'liveness, metrics, this document' },
    ],
    paths,
    components: {
      schemas: SCHEMAS,
      responses: {
        NoRoute: {
          description: '- `not_found`: no route has this method and path',
          content: json(errorBody(['not_found'], false)),
        },
      },
      securitySchemes: {
        pipelineTrigger: {
          type: 'http',
          scheme: 'bearer',
          description: 'PIPELINE_TRIGGER_SECRET: /walk, /walk-status, /producer-run, /entities/merge',
        },
        extractToken: { type: 'http', scheme: 'bearer', description: 'EXTRACT_API_TOKEN: /extract' },
        metricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'INGEST_METRICS_TOKEN: /metrics from a peer off loopback (loopback needs none)',
        },
      },
    },
  };
}

/** The document as served: plain JSON (TypeBox's symbol keys dropped). */
export const openApiDocument: Readonly<Json> = JSON.parse(JSON.stringify(buildDocument())) as Json;
