// One definition per route (docs/DECISIONS.md "One definition per route"): what the route is
// called and who may call it, its path parameters, its request body and its answers as TypeBox
// schemas, the refusals it names itself, and its handler. From that one object come the
// handler's types (the body it is given, the answers it may send), the request body's
// validation (http/body.ts), the admission in front of it (http/app.ts) and its OpenAPI entry
// (http/openapi.ts), so none of them can drift from another.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Static, TObject, TSchema, TString } from '@sinclair/typebox';
import type { Config } from '../lib/config.ts';
import type { FailureDirective } from '../lib/failure-directive.ts';
import type { Logger } from '../lib/log.ts';
import type { EngineThread } from '../engine/thread/thread-handle.ts';
import type { Auth } from './access.ts';
import { readJsonBody, type JsonBody } from './body.ts';
import { sendJson } from './errors.ts';
import type { ExtractPool } from './extract-pool.ts';
import type { RateLimited } from './rate-limit.ts';
import type { Refusal } from './refusal.ts';
import type { WalkRegistry } from './walk-registry.ts';

/** What a route's handler may be built from: the sidecar's parts, one set per app. */
export interface AppDeps {
  config: Config;
  log: Logger;
  engine: EngineThread;
  registry: WalkRegistry;
  directive: FailureDirective;
  extractPool: ExtractPool;
}

/** A body the handler reads itself (a multipart stream, raw bytes): only documented here. */
export interface OwnBody {
  readonly kind: 'own';
  readonly required: boolean;
  /** Media type -> the schema of what it carries. */
  readonly content: Readonly<Record<string, TSchema>>;
  /** The JSON form among them, which the handler checks with checkJsonBody: its refusals are documented. */
  readonly json?: JsonBody;
}

/** One answer a route sends: its description and, when it has a body, its schema and media type. */
export interface Answer {
  readonly description: string;
  readonly schema?: TSchema;
  /** application/json unless said. */
  readonly mediaType?: string;
}

export type Tag = 'walk' | 'corpus' | 'extract' | 'producer' | 'entities' | 'operations';

type PathParams = TObject<Record<string, TString>>;
type Answers = Readonly<Record<number, Answer>>;
type JsonStatus<A extends Answers> = {
  [S in keyof A & number]: A[S] extends { schema: TSchema; mediaType?: undefined } ? S : never;
}[keyof A & number];
type BodyOf<B> = B extends JsonBody<infer S> ? Static<S> : undefined;

/** What a handler is given for one request. */
export interface RouteRequest<P extends PathParams, B, A extends Answers> {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly params: Static<P>;
  /** The JSON body, validated against the definition's schema; undefined for a body the handler reads itself. */
  readonly body: BodyOf<B>;
  /** Sends one of the definition's JSON answers, its body typed by the answer's schema. */
  send<S extends JsonStatus<A>>(status: S, body: Static<NonNullable<A[S]['schema']>>): void;
}

interface RouteDocs {
  readonly method: 'GET' | 'POST';
  /** The OpenAPI path template: {name} for a path parameter. */
  readonly path: string;
  readonly operationId: string;
  readonly tag: Tag;
  readonly summary: string;
  readonly description: string;
  readonly auth: Auth;
  /** The per-minute, per-client rate limit the route counts against, when it has one. */
  readonly rateLimit?: RateLimited;
  /** Only peers on loopback are admitted (403 loopback_only otherwise). */
  readonly loopbackOnly?: true;
  /** The route's own refusals; those of its auth, rate limit, loopback rule and body are derived. */
  readonly refusals: readonly Refusal[];
}

export interface RouteDefinition<
  P extends PathParams,
  B extends JsonBody | OwnBody | undefined,
  A extends Answers,
> extends RouteDocs {
  readonly params?: P;
  readonly body?: B;
  readonly answers: A;
  /** Built once per app from its parts; then called for every admitted request. */
  readonly handler: (deps: AppDeps) => (request: RouteRequest<P, B, A>) => Promise<void>;
}

/** polka gives a route's path parameters in req.params. */
export type RequestHandler = (
  req: IncomingMessage & { params?: Readonly<Record<string, unknown>> },
  res: ServerResponse,
) => Promise<void>;

/** A definition with its types sealed in: what the app and the OpenAPI document read. */
export interface Route extends RouteDocs {
  readonly params?: PathParams;
  readonly body?: JsonBody | OwnBody;
  readonly answers: Answers;
  bind(deps: AppDeps): RequestHandler;
}

export function defineRoute<
  P extends PathParams = TObject<{}>,
  B extends JsonBody | OwnBody | undefined = undefined,
  const A extends Answers = Answers,
>(definition: RouteDefinition<P, B, A>): Route {
  const { handler, ...docs } = definition;
  return {
    ...docs,
    bind(deps) {
      const handle = handler(deps);
      const body = definition.body;
      return async (req, res) => {
        await handle({
          req,
          res,
          params: (req.params ?? {}) as Static<P>,
          body: (body?.kind === 'json' ? await readJsonBody(req, body) : undefined) as BodyOf<B>,
          send: (status, answer) => sendJson(res, status, answer),
        });
      };
    },
  };
}
