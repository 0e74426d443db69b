// The bundled mock model server of tier 1 (docs/behaviour/tiers.md#mock-server-contract):
// /v1/messages and /v1/embeddings at zero cost, deterministic, and the load and fault generator of
// tests and benchmarks. It listens on loopback only.
//
// Knobs: a fixed latency per call; a fault rate with the kinds of fault to inject (429 with
// Retry-After, 529 overloaded, a slow answer, a dropped connection), drawn from a seeded
// generator so a run can be replayed; a sentinel credential that is always refused with 401
// (the stage-5 failure injection must be observable on this tier); and, optionally, the one
// credential it accepts (`authToken`), so that it stands in for a gateway or the vendor whose
// key can be wrong (the nightly lane's dead-key preflight); and, optionally, a provider's rate
// limits (`limits`: requests and tokens per window and per model, mock/limits.ts), past which it
// answers 429 with Retry-After and the vendor's rate-limit headers. It also serves the vendor's
// Message Batches API (mock/batches.ts: create, retrieve, list, results, cancel, behind the same
// credential check), with knobs for how long a batch runs and which share of its requests end
// errored or expired. Counters of the calls served let tests prove that a walk made no model call.

import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageBatches, type BatchOptions, type BatchReply } from './batches.ts';
import { mockEmbedding, toBase64 } from './embeddings.ts';
import { FAILURE_SENTINEL } from '../lib/failure-directive.ts';
import { listen as listenOn } from '../lib/net/listen.ts';
import { EXTRACTOR_RESPONDERS } from './extractors.ts';
import {
  anthropicHeaders,
  openAiHeaders,
  RateLimits,
  retryAfterSeconds,
  type Cost,
  type MockLimits,
  type Reading,
} from './limits.ts';
import { answer, messageBody, streamMessage, usage, type MessagesRequest, type PromptResponder } from './messages.ts';

export const DEFAULT_MOCK_PORT = 8791;
export { FAILURE_SENTINEL };
/** The body cap of /v1/messages and /v1/embeddings; a batch has its own, larger (mock/batches.ts). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const MAX_EMBEDDING_INPUTS = 2048;

export type Fault = '429' | '529' | 'slow' | 'drop';

export interface MockOptions {
  prompts?: ReadonlyMap<string, PromptResponder>;
  latencyMs?: number;
  faultRate?: number;
  faults?: readonly Fault[];
  slowMs?: number;
  seed?: number;
  /**
   * When set, the only credential accepted (as x-api-key or Authorization: Bearer, as the
   * vendor and a gateway take them): any other, or none, is answered 401 authentication_error.
   * GET /health stays open (it is the tier-1 liveness gate, and carries no model output).
   */
  authToken?: string;
  /** A provider's rate limits on /v1/messages and /v1/embeddings; none when absent. */
  limits?: MockLimits;
  /** The Message Batches API's knobs: its delay, error and expiry rates, and its size limits. */
  batches?: BatchOptions;
}

/** One rate-limit decision, kept (the last MAX_ADMISSIONS) so tests can see who sent when. */
export interface AdmissionRecord {
  /** Epoch ms of the decision. */
  at: number;
  route: 'messages' | 'embeddings';
  model: string;
  /** The tokens the request costs (input and output). */
  tokens: number;
  /** The Retry-After it answered, in ms; absent when the request was admitted. */
  retryAfterMs?: number;
}
const MAX_ADMISSIONS = 100_000;

export interface MockStats {
  messages: number;
  /**
   * /v1/messages answers by the tool they called (text answers not counted), so that a test can
   * tell the extractors' calls from the resolver's and the producer's.
   */
  messagesByTool: Record<string, number>;
  embeddings: number;
  embeddedTexts: number;
  faultsInjected: number;
  rejected: number;
  /** Requests refused with 401: the sentinel, or a credential that is not `authToken`. */
  unauthorized: number;
  /** Requests refused with 429 by the rate limits (`limits`); injected faults are not counted. */
  limited: number;
  /** Message batches created. */
  batches: number;
  /** Requests submitted in all batches; their answers are not counted in `messages`. */
  batchRequests: number;
  /** Batch requests that succeeded, counted once their batch is first seen ended. */
  batchSucceeded: number;
}

export interface MockServer {
  readonly url: string;
  readonly stats: MockStats;
  /** The rate limits' decisions, oldest first (empty without `limits`). */
  readonly admissions: readonly AdmissionRecord[];
  close(): Promise<void>;
}

/** Mixed into the seed of the batches' generator. */
const BATCH_SEED_SALT = 0x9e3779b9;

function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

const query = (req: IncomingMessage) => new URL(req.url ?? '/', 'http://mock').searchParams;

function readJson(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the cap the rest is read and dropped rather than the socket cut, so that the client,
      // still sending, receives the 400 that says why.
      if (size <= maxBytes) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > maxBytes) return reject(new Error(`request body of ${size} bytes exceeds the limit of ${maxBytes}`));
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new Error('request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { type: 'error', error: { type, message } }, headers);
}

/** A batch route's path with its id as `{id}`, the form #routes keys it by, and that id. */
function routeOf(method: string | undefined, path: string): { key: string; id: string } {
  const batch = /^\/v1\/messages\/batches\/([^/]+)(\/[^/]+)?$/.exec(path);
  if (batch === null) return { key: `${method} ${path}`, id: '' };
  return { key: `${method} /v1/messages/batches/{id}${batch[2] ?? ''}`, id: batch[1]! };
}

const hostPort = (address: string, port: number) => `${address.includes(':') ? `[${address}]` : address}:${port}`;

/**
 * The mock's own origin as the client reached it (its Host header), so that a results_url
 * works through whatever name or port mapping the client used; the socket's address without one.
 */
function origin(req: IncomingMessage): string {
  const { host } = req.headers;
  return `http://${host ?? hostPort(req.socket.localAddress ?? '127.0.0.1', req.socket.localPort ?? 0)}`;
}

/** Resolves once the response can take more, or once it is gone. */
function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/** A batch's results as JSONL, line by line as the socket takes them: a batch's can run to gigabytes. */
async function sendLines(res: ServerResponse, lines: Iterable<string>): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/x-jsonl' });
  for (const line of lines) {
    if (res.destroyed) return;
    if (!res.write(line)) await writable(res);
  }
  res.end();
}

/** Constant time whatever the lengths: both sides are hashed first. */
function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function credential(req: IncomingMessage): string | null {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string') return key;
  const auth = req.headers.authorization;
  return typeof auth === 'string' ? auth.replace(/^Bearer\s+/i, '') : null;
}

/** `id`: the batch id a batch route's path names (empty on the other routes). */
type Handler = (req: IncomingMessage, res: ServerResponse, id: string) => Promise<void>;

interface Route {
  /** Answered whatever the credential: the tier-1 liveness gate, which carries no model output. */
  open?: true;
  handle: Handler;
}

/** The mock's answers: its routes, its counters and the seeded draws of its faults. */
class MockModel {
  readonly stats: MockStats = {
    messages: 0,
    messagesByTool: {},
    embeddings: 0,
    embeddedTexts: 0,
    faultsInjected: 0,
    rejected: 0,
    unauthorized: 0,
    limited: 0,
    batches: 0,
    batchRequests: 0,
    batchSucceeded: 0,
  };
  readonly admissions: AdmissionRecord[] = [];
  readonly #options: MockOptions;
  readonly #limits: RateLimits | null;
  readonly #prompts: ReadonlyMap<string, PromptResponder>;
  readonly #random: () => number;
  readonly #batches: MessageBatches;
  /** The last message id handed out. */
  #lastId = 0;
  /** `${method} ${path}` -> its route. */
  readonly #routes: ReadonlyMap<string, Route> = new Map<string, Route>([
    ['GET /health', { open: true, handle: async (_req, res) => sendJson(res, 200, { ok: true, stats: this.stats }) }],
    ['POST /v1/messages', { handle: (req, res) => this.#messages(req, res) }],
    ['POST /v1/embeddings', { handle: (req, res) => this.#embeddings(req, res) }],
    [
      'POST /v1/messages/batches',
      {
        handle: async (req, res) => {
          const created = this.#batches.create(await readJson(req, this.#batches.maxBytes));
          await sleep(this.#options.batches?.createAnswerMs ?? 0);
          await this.#sendBatch(res, created);
        },
      },
    ],
    [
      'GET /v1/messages/batches',
      { handle: (req, res) => this.#sendBatch(res, this.#batches.list(query(req), origin(req))) },
    ],
    [
      'GET /v1/messages/batches/{id}',
      { handle: (req, res, id) => this.#sendBatch(res, this.#batches.retrieve(id, origin(req))) },
    ],
    [
      'GET /v1/messages/batches/{id}/results',
      { handle: (_req, res, id) => this.#sendBatch(res, this.#batches.results(id)) },
    ],
    [
      'POST /v1/messages/batches/{id}/cancel',
      { handle: (req, res, id) => this.#sendBatch(res, this.#batches.cancel(id, origin(req))) },
    ],
  ]);

  constructor(options: MockOptions) {
    this.#options = options;
    this.#prompts = options.prompts ?? EXTRACTOR_RESPONDERS;
    this.#random = seeded(options.seed ?? 1);
    this.#limits = options.limits === undefined ? null : new RateLimits(options.limits);
    // A generator of its own, so that a batch's fates do not shift with the faults drawn before
    // it; salted, so that it does not repeat the fault generator's draws.
    const batchRandom = seeded((options.seed ?? 1) ^ BATCH_SEED_SALT);
    this.#batches = new MessageBatches(options.batches ?? {}, this.#prompts, batchRandom, this.stats);
  }

  /** Answers one request: its route, behind the credential check unless the route is open. */
  serve(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0]!;
    const { key, id } = routeOf(req.method, path);
    const route = this.#routes.get(key);
    if (route === undefined) {
      return sendError(res, 404, 'not_found_error', `mock model server: no route ${req.method} ${path}`);
    }
    const refusal = route.open ? null : this.#refusal(credential(req));
    if (refusal !== null) {
      // Like the vendor's answer to a bad key; the credential presented is never echoed.
      this.stats.rejected += 1;
      this.stats.unauthorized += 1;
      return sendError(res, 401, 'authentication_error', `mock model server: ${refusal}`);
    }
    route.handle(req, res, id).catch((error: unknown) => {
      if (!res.headersSent)
        sendError(res, 400, 'invalid_request_error', `mock model server: ${(error as Error).message}`);
    });
  }

  /** Why the credential presented is refused; null when it is accepted. */
  #refusal(presented: string | null): string | null {
    if (presented === FAILURE_SENTINEL) return 'the failure-injection sentinel credential is refused';
    const { authToken } = this.#options;
    if (authToken === undefined) return null;
    if (presented === null) return 'no credential (x-api-key or Authorization: Bearer) was sent';
    return sameSecret(presented, authToken) ? null : 'invalid credential';
  }

  /**
   * Batches debit none of the rate limits (`limits`): the vendor meters its batch API apart from
   * the per-minute message budget, and a prefill must not starve the walk that follows it. Nor do
   * the latency and fault knobs touch them: a batch's own (its delay, its error and expiry rates)
   * stand for them, and the fault draws of a walk stay the same with or without a prefill.
   */
  async #sendBatch(res: ServerResponse, reply: BatchReply): Promise<void> {
    if ('message' in reply) {
      this.stats.rejected += 1;
      return sendError(res, reply.status, reply.errorType, `mock model server: ${reply.message}`);
    }
    if ('lines' in reply) return sendLines(res, reply.lines);
    sendJson(res, 200, reply.json);
  }

  #nextId(): string {
    this.#lastId += 1;
    return String(this.#lastId).padStart(8, '0');
  }

  /** Applies the latency and maybe a fault; true when the request was answered by the fault. */
  async #disturb(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const options = this.#options;
    if (options.latencyMs) await sleep(options.latencyMs);
    const faults = options.faults ?? ['429', '529'];
    if (!options.faultRate || faults.length === 0 || this.#random() >= options.faultRate) return false;
    this.stats.faultsInjected += 1;
    switch (faults[Math.floor(this.#random() * faults.length)]!) {
      case '429':
        sendError(res, 429, 'rate_limit_error', 'mock model server: injected rate limit', { 'retry-after': '0' });
        return true;
      case '529':
        sendError(res, 529, 'overloaded_error', 'mock model server: injected overload');
        return true;
      case 'slow':
        await sleep(options.slowMs ?? 2_000);
        return false;
      case 'drop':
        req.socket.destroy();
        return true;
    }
  }

  async #messages(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = (await readJson(req)) as MessagesRequest;
    if (await this.#disturb(req, res)) return;
    const reply = answer(request, this.#prompts, () => this.#nextId());
    if (reply.status !== 200 || !('content' in reply)) {
      this.stats.rejected += 1;
      sendError(
        res,
        reply.status,
        'errorType' in reply ? reply.errorType : 'api_error',
        'message' in reply ? reply.message : '',
      );
      return;
    }
    const { input_tokens, output_tokens } = usage(request, reply.content);
    const cost = {
      requests: 1,
      tokens: input_tokens + output_tokens,
      'input-tokens': input_tokens,
      'output-tokens': output_tokens,
    };
    const limit = this.#admit('messages', request.model, cost, anthropicHeaders);
    if (limit.refused)
      return sendError(res, 429, 'rate_limit_error', 'mock model server: rate limit exceeded', limit.headers);
    this.stats.messages += 1;
    for (const block of reply.content)
      if (block.type === 'tool_use')
        this.stats.messagesByTool[block.name] = (this.stats.messagesByTool[block.name] ?? 0) + 1;
    const id = this.#nextId();
    if (request.stream) streamMessage(res, request, reply.content, id, limit.headers);
    else sendJson(res, 200, messageBody(request, reply.content, id), limit.headers);
  }

  /**
   * The rate limits' decision on one request: the vendor's headers to send with the answer and,
   * when refused, the 429's Retry-After among them. Nothing without `limits`.
   */
  #admit(
    route: AdmissionRecord['route'],
    model: string,
    cost: Cost,
    vendorHeaders: (readings: readonly Reading[]) => Record<string, string>,
  ): { refused: boolean; headers: Record<string, string> } {
    if (this.#limits === null) return { refused: false, headers: {} };
    const at = Date.now();
    const admission = this.#limits.admit(model, cost, at);
    const headers = vendorHeaders(admission.readings);
    const record: AdmissionRecord = { at, route, model, tokens: cost.tokens };
    if (!admission.admitted) {
      this.stats.limited += 1;
      record.retryAfterMs = admission.retryAfterMs;
      headers['retry-after'] = retryAfterSeconds(admission.retryAfterMs);
    }
    if (this.admissions.push(record) > MAX_ADMISSIONS) this.admissions.shift();
    return { refused: !admission.admitted, headers };
  }

  async #embeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = (await readJson(req)) as {
      input?: unknown;
      model?: string;
      dimensions?: number;
      encoding_format?: string;
    };
    if (await this.#disturb(req, res)) return;
    const inputs = typeof request.input === 'string' ? [request.input] : request.input;
    if (
      !Array.isArray(inputs) ||
      inputs.length === 0 ||
      inputs.length > MAX_EMBEDDING_INPUTS ||
      !inputs.every((i) => typeof i === 'string' && i !== '')
    ) {
      this.stats.rejected += 1;
      sendError(
        res,
        400,
        'invalid_request_error',
        `mock model server: input must be 1 to ${MAX_EMBEDDING_INPUTS} non-empty strings`,
      );
      return;
    }
    const tokens = inputs.reduce((n: number, t: string) => n + Math.ceil(t.length / 4), 0);
    const cost = { requests: 1, tokens, 'input-tokens': tokens, 'output-tokens': 0 };
    const model = request.model ?? 'text-embedding-3-large';
    const limit = this.#admit('embeddings', model, cost, openAiHeaders);
    if (limit.refused)
      return sendError(res, 429, 'rate_limit_exceeded', 'mock model server: rate limit exceeded', limit.headers);
    const dimensions = request.dimensions ?? 3072;
    this.stats.embeddings += 1;
    this.stats.embeddedTexts += inputs.length;
    const base64 = request.encoding_format === 'base64';
    sendJson(
      res,
      200,
      {
        object: 'list',
        model,
        data: inputs.map((text: string, index) => {
          const vector = mockEmbedding(text, dimensions);
          return { object: 'embedding', index, embedding: base64 ? toBase64(vector) : Array.from(vector) };
        }),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      },
      limit.headers,
    );
  }
}

export async function startMockServer(
  options: MockOptions = {},
  listen: { host?: string; port?: number } = {},
): Promise<MockServer> {
  const model = new MockModel(options);
  const server: Server = createServer((req, res) => model.serve(req, res));
  await listenOn(server, listen.port ?? 0, listen.host ?? '127.0.0.1');
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${hostPort(address, port)}`,
    stats: model.stats,
    admissions: model.admissions,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
