// Who may call a route, checked in front of its handler in this order: the failed
// authentications of the client (checked before the bearer, so guessing tokens is as limited
// as using them), the bearer, the route's own rate limit, then the loopback rule. Each check's
// refusals are listed here beside it, for the OpenAPI document.

import type { IncomingMessage } from 'node:http';
import type { Config } from '../lib/config.ts';
import { isLoopback, requireBearer } from './auth.ts';
import { HttpError } from './errors.ts';
import {
  AUTH_FAILURES_KNOB,
  RATE_LIMIT_KNOBS,
  authFailureLimit,
  clientOf,
  perMinute,
  type RateLimited,
} from './rate-limit.ts';
import type { Refusal } from './refusal.ts';

/** The bearer groups: the secret each route of the group asks for, and the refusal when it is unset. */
export const BEARERS = {
  trigger: {
    secretName: 'PIPELINE_TRIGGER_SECRET',
    disabledError: 'trigger_disabled',
    secret: (config: Config) => config.secrets.pipelineTrigger,
  },
  extract: {
    secretName: 'EXTRACT_API_TOKEN',
    disabledError: 'extract_disabled',
    secret: (config: Config) => config.secrets.extractApiToken,
  },
} as const;

/** none: anyone; metrics: loopback peers, others with INGEST_METRICS_TOKEN; else a bearer group. */
export type Auth = 'none' | 'metrics' | keyof typeof BEARERS;

/** What the checks read of a route's definition. */
export interface Guarded {
  readonly path: string;
  readonly auth: Auth;
  readonly rateLimit?: RateLimited;
  readonly loopbackOnly?: true;
}

export type Admit = (req: IncomingMessage) => Promise<void>;

/** The checks of one app: its failed-authentication counts are shared by every route. */
export class Admission {
  readonly #config: Config;
  readonly #authFailures: ReturnType<typeof authFailureLimit>;

  constructor(config: Config) {
    this.#config = config;
    this.#authFailures = authFailureLimit(config.rateLimits.authFailures);
  }

  /** The checks in front of one route; its rate limit counts that route's requests only. */
  of(route: Guarded): Admit {
    const config = this.#config;
    const limit = route.rateLimit === undefined ? undefined : perMinute(config.rateLimits[route.rateLimit]);
    const bearer = route.auth === 'none' || route.auth === 'metrics' ? undefined : BEARERS[route.auth];
    const loopbackRefusal = `${route.path} accepts connections from loopback only`;
    return async (req) => {
      if (route.auth === 'metrics') requireMetricsAccess(req, config.metricsToken);
      if (bearer !== undefined || limit !== undefined) {
        const client = clientOf(req, config.rateLimits.trustedProxyHeader);
        if (bearer !== undefined) await this.#bearer(req, client, bearer);
        await limit?.(client);
      }
      if (route.loopbackOnly && !isLoopback(req.socket.remoteAddress))
        throw new HttpError(403, 'loopback_only', loopbackRefusal);
    };
  }

  async #bearer(req: IncomingMessage, client: string, bearer: (typeof BEARERS)[keyof typeof BEARERS]): Promise<void> {
    await this.#authFailures.check(client);
    try {
      requireBearer(req, bearer.secret(this.#config), bearer.disabledError, bearer.secretName);
    } catch (error) {
      if (error instanceof HttpError && error.status === 401) await this.#authFailures.failed(client);
      throw error;
    }
  }
}

const AUTH_FAILURES = `more than ${AUTH_FAILURES_KNOB} failed authentications a minute from this client (checked before the bearer, so a right bearer is refused too until the window passes)`;

/** The refusals of a route's checks. */
export function admissionRefusals(route: Guarded): Refusal[] {
  const refusals: Refusal[] = [];
  const knob = route.rateLimit === undefined ? undefined : RATE_LIMIT_KNOBS[route.rateLimit];
  if (route.auth === 'metrics')
    refusals.push(
      {
        status: 401,
        error: 'unauthorized',
        when: 'a peer off loopback without the bearer INGEST_METRICS_TOKEN (set)',
        headers: ['WWW-Authenticate'],
      },
      { status: 403, error: 'loopback_only', when: 'a peer off loopback while INGEST_METRICS_TOKEN is unset' },
    );
  if (route.auth === 'trigger' || route.auth === 'extract') {
    const { secretName, disabledError } = BEARERS[route.auth];
    refusals.push(
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
    );
  }
  const limits = [
    ...(knob === undefined ? [] : [`more than ${knob} requests a minute from this client`]),
    ...(route.auth === 'trigger' || route.auth === 'extract' ? [AUTH_FAILURES] : []),
  ];
  if (limits.length > 0)
    refusals.push({ status: 429, error: 'rate_limited', when: limits.join(', or '), headers: ['Retry-After'] });
  if (route.loopbackOnly)
    refusals.push({
      status: 403,
      error: 'loopback_only',
      when: `the peer is not on loopback (127.0.0.0/8, ::1, their IPv4-mapped forms): ${route.path} is not publicly routed`,
    });
  return refusals;
}

/** Loopback peers pass; any other needs the metrics token as its bearer, and none passes without one. */
export function requireMetricsAccess(req: Pick<IncomingMessage, 'socket' | 'headers'>, token: string | null): void {
  if (isLoopback(req.socket.remoteAddress)) return;
  if (token === null)
    throw new HttpError(
      403,
      'loopback_only',
      '/metrics answers loopback peers only unless INGEST_METRICS_TOKEN is set',
    );
  requireBearer(req, token, 'metrics_disabled', 'INGEST_METRICS_TOKEN');
}
