// The sidecar's HTTP surface (docs/behaviour/routes.md) as an OpenAPI 3.1 document, generated from the route definitions
// (http/route.ts) and served at GET /openapi.json. Each operation comes from one definition: its
// path parameters, request body and answers are the schemas the route is typed and validated
// by, and its refusals are the route's own plus those of its checks (http/access.ts) and of its
// JSON body (http/body.ts). test/openapi.test.ts holds the document to the running sidecar.
//
// A route's refusals are grouped by status into one response whose body schema enumerates the
// error names that status carries.

import { Type, type TSchema } from '@sinclair/typebox';
import { FAIL_STAGE5_MODES } from '../lib/failure-directive.ts';
import { admissionRefusals, type Auth } from './access.ts';
import { jsonBodyRefusals } from './body.ts';
import { RATE_LIMIT_KNOBS } from './rate-limit.ts';
import { INTERNAL, type ErrorHeader, type Refusal } from './refusal.ts';
import type { Route, Tag } from './route.ts';

/** The version of this description; test/openapi.test.ts holds it equal to package.json's. */
export const API_VERSION = '0.1.0';

type Json = Record<string, unknown>;

const json = (schema: TSchema | Json) => ({ 'application/json': { schema } });

/**
 * The request and answer schemas of the definitions that carry an $id, placed once under
 * components.schemas by that name and referred to from each operation.
 */
class NamedSchemas {
  readonly #schemas: Record<string, TSchema> = {};

  place(schema: TSchema): TSchema | Json {
    if (schema.$id === undefined) return schema;
    const { $id, ...rest } = schema;
    const known = this.#schemas[$id];
    if (known !== undefined && known !== rest && JSON.stringify(known) !== JSON.stringify(rest))
      throw new Error(`two schemas are named ${$id}`);
    this.#schemas[$id] = rest as TSchema;
    return { $ref: `#/components/schemas/${$id}` };
  }

  get all(): Readonly<Record<string, TSchema>> {
    return this.#schemas;
  }
}

/** The one error body (docs/behaviour/routes.md#the-error-body), its `error` limited to `names`. */
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

const HEADERS: Record<ErrorHeader, Json> = {
  'Retry-After': {
    description: 'seconds to wait before trying again',
    schema: { type: 'integer', minimum: 1 },
  },
  'WWW-Authenticate': { description: 'the scheme to authenticate with', schema: { type: 'string', const: 'Bearer' } },
};

const SECURITY: Record<Auth, Json[]> = {
  none: [],
  trigger: [{ pipelineTrigger: [] }],
  extract: [{ extractToken: [] }],
  // Anonymous on loopback, the bearer from anywhere else.
  metrics: [{}, { metricsToken: [] }],
};

const TAGS: Record<Tag, string> = {
  walk: 'walks of the corpus and their registry',
  corpus: 'staging files into the corpus',
  extract: 'HTML cleaning on demand',
  producer: 'the knowledge-bundle producer',
  entities: 'curation of entity mentions',
  operations: 'liveness, metrics, this document',
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

/** Every refusal of a route: its checks', its body's, its own, and the fault nothing foresees. */
function refusalsOf(route: Route): Refusal[] {
  const body = route.body?.kind === 'json' ? route.body : route.body?.json;
  return [...admissionRefusals(route), ...(body ? jsonBodyRefusals(body) : []), ...route.refusals, INTERNAL];
}

function requestBody(route: Route, named: NamedSchemas): Json | undefined {
  const body = route.body;
  if (body === undefined) return undefined;
  const content =
    body.kind === 'json'
      ? json(named.place(body.schema))
      : Object.fromEntries(
          Object.entries(body.content).map(([type, schema]) => [type, { schema: named.place(schema) }]),
        );
  return { required: body.required, content };
}

function parameters(route: Route): Json[] | undefined {
  if (route.params === undefined) return undefined;
  return Object.entries(route.params.properties).map(([name, { description, ...schema }]) => ({
    name,
    in: 'path',
    required: true,
    description,
    schema,
  }));
}

function operation(route: Route, named: NamedSchemas): Json {
  const responses: Json = {};
  for (const [status, answer] of Object.entries(route.answers))
    responses[status] = {
      description: answer.description,
      ...(answer.schema
        ? { content: { [answer.mediaType ?? 'application/json']: { schema: named.place(answer.schema) } } }
        : {}),
    };
  const byStatus = Map.groupBy(refusalsOf(route), (refusal) => refusal.status);
  for (const [status, refusals] of [...byStatus].sort(([a], [b]) => a - b)) {
    // One status is either an answer or a refusal, never both.
    if (responses[String(status)] !== undefined)
      throw new Error(`${route.method} ${route.path}: status ${status} is both an answer and a refusal`);
    responses[String(status)] = refusalResponse(refusals);
  }
  const params = parameters(route);
  const body = requestBody(route, named);
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    description: route.description,
    security: SECURITY[route.auth],
    ...(params ? { parameters: params } : {}),
    ...(body ? { requestBody: body } : {}),
    responses,
    ...(route.loopbackOnly ? { 'x-loopback-only': true } : {}),
    ...(route.rateLimit
      ? { 'x-rate-limit': { knob: RATE_LIMIT_KNOBS[route.rateLimit], per: 'minute', counted: 'per client' } }
      : {}),
  };
}

/** The document of `routes`, as plain JSON (TypeBox's symbol keys dropped). */
export function openApiDocument(routes: readonly Route[]): Json {
  const named = new NamedSchemas();
  const paths: Record<string, Json> = {};
  for (const route of routes)
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(route, named) };
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'ingest sidecar',
      version: API_VERSION,
      description: [
        'The ingestion sidecar of `ingest serve` (docs/behaviour/routes.md).',
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
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: {
        ...named.all,
        Error: Type.Object(
          {
            error: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'the snake_case name; stable' }),
            message: Type.String({ description: 'for people; may change' }),
            valid_modes: Type.Optional(Type.Array(Type.String(), { description: '/stage directive errors only' })),
          },
          { description: 'The one error body. Each response narrows `error` to the names it can carry.' },
        ),
      },
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
  return JSON.parse(JSON.stringify(document)) as Json;
}
