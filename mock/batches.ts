// The mock's Message Batches API (mock/README.md "Message batches"), so that buying extraction
// answers ahead of a walk through the vendor's batch endpoints runs offline on tier 1. A batch is
// validated whole as the vendor validates it; then each request's fate is drawn at creation from
// a seeded generator (errored or expired at the configured rates, else the very answer
// /v1/messages would give for its params), so a run replays. Nothing is revealed before the batch
// ends, `delayMs` after its creation: a cancel before then cancels every request.

import { randomBytes } from 'node:crypto';
import { answer, messageBody, type MessagesRequest, type PromptResponder } from './messages.ts';

export interface BatchOptions {
  /** How long a batch stays in progress, in ms; at 0 (the default) it has ended by the next look. */
  delayMs?: number;
  /** The share of requests that end errored (api_error), drawn per request; 0 by default. */
  errorRate?: number;
  /** The share of requests that end expired, drawn per request after the errored; 0 by default. */
  expireRate?: number;
  /** Requests a batch may hold; the vendor's 100,000 by default. */
  maxRequests?: number;
  /** Bytes a batch's body may take; the vendor's 256 MB by default. */
  maxBytes?: number;
  /**
   * How long the answer to a create is held once the batch is made, in ms (0 by default): a
   * client killed meanwhile leaves a batch whose id it never learnt, as a crash can at the vendor.
   */
  createAnswerMs?: number;
}

/** The counters the batches keep among the mock's stats. */
export interface BatchCounters {
  batches: number;
  batchRequests: number;
  batchSucceeded: number;
}

/** What a batch route answers: JSON, the results' lines, or a refusal in the vendor's terms. */
export type BatchReply =
  | { status: 200; json: unknown }
  | { status: 200; lines: Iterable<string> }
  | { status: 400 | 404; errorType: 'invalid_request_error' | 'not_found_error'; message: string };

type Status = 'in_progress' | 'canceling' | 'ended';

type Result =
  | { type: 'succeeded'; message: ReturnType<typeof messageBody> }
  | { type: 'errored'; error: { type: 'error'; error: { type: string; message: string }; request_id: null } }
  | { type: 'canceled' }
  | { type: 'expired' };

interface RequestCounts {
  processing: number;
  succeeded: number;
  errored: number;
  canceled: number;
  expired: number;
}

interface Batch {
  id: string;
  createdAt: number;
  /** When it ends unless canceled first. */
  dueAt: number;
  /** When a cancel was asked: the batch ends then, every request canceled. */
  cancelAt: number | null;
  /** Each request's fate, drawn at creation, in the order submitted. */
  entries: { custom_id: string; fate: Result }[];
  /** Its tallies, fixed once it is first seen ended (and its successes counted then). */
  counts: RequestCounts | null;
}

const DEFAULT_MAX_REQUESTS = 100_000;
const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The vendor's page size for the list, by default and at most. */
const PAGE = { default: 20, max: 1000 };
const CANCELED: Result = { type: 'canceled' };

const iso = (ms: number) => new Date(ms).toISOString();
const endsAt = (batch: Batch) => batch.cancelAt ?? batch.dueAt;
const refusal = (message: string): BatchReply => ({ status: 400, errorType: 'invalid_request_error', message });
const notFound = (id: string): BatchReply => ({
  status: 404,
  errorType: 'not_found_error',
  message: `no message batch ${id}`,
});

function errored(type: string, message: string): Result {
  return { type: 'errored', error: { type: 'error', error: { type, message }, request_id: null } };
}

/** Until a batch ends, every request counts as processing, as the vendor's do. */
const processing = (n: number): RequestCounts => ({ processing: n, succeeded: 0, errored: 0, canceled: 0, expired: 0 });

/** What a request came to: its fate, unless a cancel came first. */
const outcome = (batch: Batch, fate: Result) => (batch.cancelAt === null ? fate : CANCELED);

function tally(batch: Batch): RequestCounts {
  const counts = processing(0);
  for (const { fate } of batch.entries) counts[outcome(batch, fate).type] += 1;
  return counts;
}

function* resultLines(batch: Batch): Iterable<string> {
  for (const { custom_id, fate } of batch.entries)
    yield `${JSON.stringify({ custom_id, result: outcome(batch, fate) })}\n`;
}

/** Why the submitted requests cannot make a batch; null when they can. */
function invalid(requests: unknown, maxRequests: number): string | null {
  if (!Array.isArray(requests) || requests.length === 0) return 'requests must be a non-empty array';
  if (requests.length > maxRequests)
    return `a batch holds at most ${maxRequests} requests; this one has ${requests.length}`;
  const seen = new Set<string>();
  for (const [i, request] of requests.entries()) {
    const { custom_id: id, params } = (request ?? {}) as { custom_id?: unknown; params?: unknown };
    if (typeof id !== 'string' || !CUSTOM_ID.test(id))
      return `requests[${i}].custom_id must match ${CUSTOM_ID.source} (got ${JSON.stringify(id)})`;
    if (seen.has(id)) return `requests[${i}].custom_id "${id}" is used twice; custom_id must be unique in a batch`;
    seen.add(id);
    if (typeof params !== 'object' || params === null || Array.isArray(params))
      return `requests[${i}].params must be an object`;
  }
  return null;
}

/** The mock's batches: their fates, drawn at creation, and the vendor's views of them. */
export class MessageBatches {
  readonly #delayMs: number;
  readonly #errorRate: number;
  readonly #expireRate: number;
  readonly #maxRequests: number;
  readonly #maxBytes: number;
  readonly #prompts: ReadonlyMap<string, PromptResponder>;
  readonly #random: () => number;
  readonly #counters: BatchCounters;
  /** Oldest first. */
  readonly #batches: Batch[] = [];
  readonly #byId = new Map<string, Batch>();
  /**
   * Sets this process's batch ids apart from another mock's: tier 1 starts a mock per process,
   * and a client holding an id from an earlier one must meet a 404, not someone else's batch.
   */
  readonly #instance = randomBytes(4).toString('hex');

  constructor(
    options: BatchOptions,
    prompts: ReadonlyMap<string, PromptResponder>,
    random: () => number,
    counters: BatchCounters,
  ) {
    this.#delayMs = options.delayMs ?? 0;
    this.#errorRate = options.errorRate ?? 0;
    this.#expireRate = options.expireRate ?? 0;
    this.#maxRequests = options.maxRequests ?? DEFAULT_MAX_REQUESTS;
    this.#maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.#prompts = prompts;
    this.#random = random;
    this.#counters = counters;
  }

  /** The largest body POST /v1/messages/batches reads. */
  get maxBytes(): number {
    return this.#maxBytes;
  }

  create(body: unknown): BatchReply {
    this.#settle();
    const requests = (body as { requests?: unknown } | null)?.requests;
    const why = invalid(requests, this.#maxRequests);
    if (why !== null) return refusal(why);
    const submitted = requests as { custom_id: string; params: MessagesRequest }[];
    const now = Date.now();
    const seq = this.#batches.length + 1;
    const ids = sequence(`b${seq}_`);
    const batch: Batch = {
      id: `msgbatch_mock_${this.#instance}_${String(seq).padStart(6, '0')}`,
      createdAt: now,
      dueAt: now + this.#delayMs,
      cancelAt: null,
      entries: submitted.map(({ custom_id, params }) => ({ custom_id, fate: this.#fate(params, ids) })),
      counts: null,
    };
    this.#batches.push(batch);
    this.#byId.set(batch.id, batch);
    this.#counters.batches += 1;
    this.#counters.batchRequests += submitted.length;
    // The vendor's answer to a create is always in progress, whatever the delay.
    return { status: 200, json: this.#view(batch, '', 'in_progress') };
  }

  retrieve(id: string, origin: string): BatchReply {
    this.#settle();
    const batch = this.#byId.get(id);
    return batch === undefined ? notFound(id) : { status: 200, json: this.#view(batch, origin) };
  }

  /** Newest first, paged as the SDK's Page reads it: after_id goes back in time, before_id forward. */
  list(query: URLSearchParams, origin: string): BatchReply {
    this.#settle();
    const limit = Number(query.get('limit') ?? PAGE.default);
    if (!Number.isInteger(limit) || limit < 1 || limit > PAGE.max)
      return refusal(`limit must be a whole number from 1 to ${PAGE.max}`);
    const [after, before] = [query.get('after_id'), query.get('before_id')];
    if (after !== null && before !== null) return refusal('give after_id or before_id, not both');
    const newest = this.#batches.toReversed();
    const cursor = after ?? before;
    const at = cursor === null ? -1 : newest.findIndex((b) => b.id === cursor);
    if (cursor !== null && at < 0) return notFound(cursor);
    const [start, end] =
      before !== null ? [Math.max(0, at - limit), at] : [at + 1, Math.min(at + 1 + limit, newest.length)];
    const data = newest.slice(start, end).map((batch) => this.#view(batch, origin));
    return {
      status: 200,
      json: {
        data,
        has_more: before !== null ? start > 0 : end < newest.length,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      },
    };
  }

  /** One JSON line per request, in the order submitted (the vendor promises no order). */
  results(id: string): BatchReply {
    this.#settle();
    const batch = this.#byId.get(id);
    if (batch === undefined) return notFound(id);
    if (batch.counts === null)
      return refusal(`message batch ${id} is still ${this.#status(batch)}; its results are ready once it has ended`);
    return { status: 200, lines: resultLines(batch) };
  }

  cancel(id: string, origin: string): BatchReply {
    this.#settle();
    const batch = this.#byId.get(id);
    if (batch === undefined) return notFound(id);
    if (batch.counts !== null)
      return refusal(`message batch ${id} has ended; only a batch in progress can be canceled`);
    batch.cancelAt ??= Date.now();
    // Its cancel is answered as the vendor's is, canceling; from the next look it has ended.
    return { status: 200, json: this.#view(batch, origin, 'canceling') };
  }

  /** A request's fate: one seeded draw per request, in order, so a seed replays the same split. */
  #fate(params: MessagesRequest, ids: () => string): Result {
    const draw = this.#random();
    if (draw < this.#errorRate) return errored('api_error', 'mock model server: injected batch request error');
    if (draw < this.#errorRate + this.#expireRate) return { type: 'expired' };
    try {
      const reply = answer(params, this.#prompts, ids);
      if ('content' in reply) return { type: 'succeeded', message: messageBody(params, reply.content, ids()) };
      return errored(reply.errorType, reply.message);
    } catch (error) {
      // /v1/messages answers a request its responder chokes on with a 400: the same, per request.
      return errored('invalid_request_error', `mock model server: ${(error as Error).message}`);
    }
  }

  /** Fixes the tallies of every batch whose time has come, counting its successes once. */
  #settle(): void {
    const now = Date.now();
    for (const batch of this.#batches) {
      if (batch.counts !== null || now < endsAt(batch)) continue;
      batch.counts = tally(batch);
      this.#counters.batchSucceeded += batch.counts.succeeded;
    }
  }

  #status(batch: Batch): Status {
    if (batch.counts !== null) return 'ended';
    return batch.cancelAt === null ? 'in_progress' : 'canceling';
  }

  /** The MessageBatch object; `moment` renders it as a create or a cancel answers it. */
  #view(batch: Batch, origin: string, moment: Status = this.#status(batch)) {
    const ended = moment === 'ended';
    return {
      id: batch.id,
      type: 'message_batch' as const,
      processing_status: moment,
      request_counts: (ended ? batch.counts : null) ?? processing(batch.entries.length),
      created_at: iso(batch.createdAt),
      expires_at: iso(batch.createdAt + DAY_MS),
      ended_at: ended ? iso(endsAt(batch)) : null,
      archived_at: null,
      cancel_initiated_at: batch.cancelAt === null ? null : iso(batch.cancelAt),
      results_url: ended ? `${origin}/v1/messages/batches/${batch.id}/results` : null,
    };
  }
}

/** Ids for one batch's messages and tool calls: deterministic, and apart from /v1/messages' own. */
function sequence(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}${String((n += 1)).padStart(6, '0')}`;
}
