// The vendor's Message Batches API as the prefill uses it, through the extractors' own SDK
// client (lib/llm/client.ts: the same tier, the same credential): create a batch, wait for it to
// end, read its results, and find a batch that was created for a submission whose record never
// learnt its id (engine/prefill/ledger.ts). Reads are tried again through the service's retry
// (lib/llm/retry.ts); a create is not (a create that timed out may have made its batch: the next
// prefill looks for it instead).
//
// The vendor's batches carry no metadata of their own, so such a batch is recognised by what it
// is: of exactly as many requests, claimed by no other submission and not found before to hold
// other requests, and of those the one created closest after the record (the create follows the
// record at once; one up to a minute before it is taken only when none is after, for clock skew).
// Its results confirm it: a batch none of whose entries the submission names is not its own
// (engine/prefill/prefill.ts keeps looking).

import { setTimeout as sleep } from 'node:timers/promises';
import { IngestError } from '../../lib/errors.ts';
import type { LlmClient, LlmMessage } from '../../lib/llm/client.ts';
import { withRetry, type RetryPolicy } from '../../lib/llm/retry.ts';
import type { PrefillRequest } from './plan.ts';
import type { Submission } from './ledger.ts';

/** The batch endpoint is not served where the model client points (a gateway that does not relay it). */
export class BatchApiUnavailableError extends IngestError {
  constructor(status: number) {
    super(
      'batch_api_unavailable',
      `the model endpoint does not serve the Message Batches API (HTTP ${status} to GET /v1/messages/batches): ` +
        'nothing was submitted; point ANTHROPIC_BASE_URL at an endpoint that serves it, or let the walk ask as it goes',
    );
  }
}

/** The vendor's limit on one batch's body; requests are split below it with room for the envelope. */
export const BATCH_MAX_BYTES = 256 * 1024 * 1024 - 1024 * 1024;

/** How far before its record a batch's creation time may lie and still be the submission's (clock skew). */
const CLOCK_SKEW_MS = 60_000;

/** Statuses that say the endpoint is not there, as opposed to refusing this caller. */
const NOT_SERVED = new Set([404, 405, 501]);

/** A read of a batch (idempotent) tried again over five minutes, as a model call is. */
const READ_RETRY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 6,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  deadlineMs: 300_000,
});

/** The HTTP status of a vendor's answer carried by an error (the SDK's, or the retry's cause). */
export function statusOf(error: unknown): number | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const status = (e as { status?: unknown }).status;
    if (typeof status === 'number') return status;
  }
  return undefined;
}

export type EntryResult =
  | { customId: string; kind: 'succeeded'; message: LlmMessage }
  | { customId: string; kind: 'errored' | 'canceled' | 'expired' };

export class BatchVendor {
  readonly #client: LlmClient;
  readonly #pollMs: number;

  constructor(client: LlmClient, pollMs: number) {
    this.#client = client;
    this.#pollMs = pollMs;
  }

  /** Throws BatchApiUnavailableError when the endpoint does not serve batches; any other refusal as it came. */
  async checkServed(): Promise<void> {
    try {
      await this.#client.messages.batches.list({ limit: 1 });
    } catch (error) {
      const status = statusOf(error);
      if (status !== undefined && NOT_SERVED.has(status)) throw new BatchApiUnavailableError(status);
      throw error;
    }
  }

  /** Creates a batch of the requests; resolves with its id. */
  async create(requests: readonly PrefillRequest[]): Promise<string> {
    const batch = await this.#client.messages.batches.create({
      requests: requests.map((r) => ({ custom_id: r.customId, params: r.params })),
    });
    return batch.id;
  }

  /** Whether the endpoint still knows the batch (it keeps results 29 days; another endpoint never knew it). */
  async knows(batchId: string): Promise<boolean> {
    try {
      await this.#read('batch_retrieve', (signal) => this.#client.messages.batches.retrieve(batchId, { signal }));
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
  }

  /** Waits, a poll at a time, until the batch has ended. */
  async untilEnded(batchId: string): Promise<void> {
    for (;;) {
      const batch = await this.#read('batch_retrieve', (signal) =>
        this.#client.messages.batches.retrieve(batchId, { signal }),
      );
      if (batch.processing_status === 'ended') return;
      await sleep(this.#pollMs);
    }
  }

  /** The ended batch's entries, as they stream in. */
  async *results(batchId: string): AsyncGenerator<EntryResult> {
    // The stream outlives the retry's deadline, so it is not given the retry's signal.
    const lines = await this.#read('batch_results', () => this.#client.messages.batches.results(batchId));
    for await (const entry of lines) {
      const { result } = entry;
      yield result.type === 'succeeded'
        ? { customId: entry.custom_id, kind: 'succeeded', message: result.message }
        : { customId: entry.custom_id, kind: result.type };
    }
  }

  /**
   * The batch the vendor made for `submission` before its id was recorded, if any: of its size,
   * not in `claimed` nor among those found not to be its own, created closest after its record
   * (or, when none is after, closest before it within the clock skew).
   */
  async findUnrecorded(submission: Submission, claimed: ReadonlySet<string>): Promise<string | null> {
    const since = submission.recordedAt - CLOCK_SKEW_MS;
    const notIts = new Set(submission.notIts ?? []);
    let found: { id: string; distance: number } | null = null;
    // Newest first: stop at the first batch older than the skew allows.
    for await (const batch of this.#client.messages.batches.list({ limit: 100 })) {
      const created = Date.parse(batch.created_at);
      if (created < since) break;
      const { processing, succeeded, errored, canceled, expired } = batch.request_counts;
      const size = processing + succeeded + errored + canceled + expired;
      if (size !== submission.entries.length || claimed.has(batch.id) || notIts.has(batch.id)) continue;
      // One after the record always beats one before it.
      const after = created >= submission.recordedAt;
      const distance = after ? created - submission.recordedAt : CLOCK_SKEW_MS + submission.recordedAt - created;
      if (found === null || distance < found.distance) found = { id: batch.id, distance };
    }
    return found?.id ?? null;
  }

  #read<T>(kind: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return withRetry(call, READ_RETRY, () => {}, kind);
  }
}
