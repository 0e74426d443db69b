// The vendor's Message Batches API as the prefill uses it, through the extractors' own SDK
// client (lib/llm/client.ts: the same tier, the same credential): create a batch, wait for it to
// end, read its results, and find a batch that was created for a submission whose record never
// learnt its id (engine/prefill/ledger.ts).
//
// The vendor's batches carry no metadata of their own, so such a batch is recognised by what it
// is: created after its submission was recorded, with exactly as many requests, and claimed by
// no other submission. Its results confirm it (every custom_id is the submission's); a batch that
// turns out to hold other requests is not the submission's, and the submission is bought again.

import { setTimeout as sleep } from 'node:timers/promises';
import { IngestError } from '../../lib/errors.ts';
import type { LlmClient, LlmMessage } from '../../lib/llm/client.ts';
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
const CLOCK_SKEW_MS = 5 * 60_000;

/** Statuses that say the endpoint is not there, as opposed to refusing this caller. */
const NOT_SERVED = new Set([404, 405, 501]);

export type EntryResult =
  | { customId: string; kind: 'succeeded'; message: LlmMessage }
  | { customId: string; kind: 'errored' | 'canceled' | 'expired' };

export interface EndedBatch {
  id: string;
  counts: { succeeded: number; errored: number; canceled: number; expired: number };
}

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
      const status = (error as { status?: unknown }).status;
      if (typeof status === 'number' && NOT_SERVED.has(status)) throw new BatchApiUnavailableError(status);
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

  /** Waits, a poll at a time, until the batch has ended. */
  async untilEnded(batchId: string): Promise<EndedBatch> {
    for (;;) {
      const batch = await this.#client.messages.batches.retrieve(batchId);
      if (batch.processing_status === 'ended') {
        const { succeeded, errored, canceled, expired } = batch.request_counts;
        return { id: batch.id, counts: { succeeded, errored, canceled, expired } };
      }
      await sleep(this.#pollMs);
    }
  }

  /** The ended batch's entries, as they stream in. */
  async *results(batchId: string): AsyncGenerator<EntryResult> {
    for await (const entry of await this.#client.messages.batches.results(batchId)) {
      const { result } = entry;
      yield result.type === 'succeeded'
        ? { customId: entry.custom_id, kind: 'succeeded', message: result.message }
        : { customId: entry.custom_id, kind: result.type };
    }
  }

  /**
   * The batch the vendor made for `submission` before its id was recorded, if any: the oldest one
   * created after its record (less the skew), of its size, not in `claimed`.
   */
  async findUnrecorded(submission: Submission, claimed: ReadonlySet<string>): Promise<string | null> {
    const since = submission.recordedAt - CLOCK_SKEW_MS;
    let found: string | null = null;
    // Newest first: stop at the first batch older than the record.
    for await (const batch of this.#client.messages.batches.list({ limit: 100 })) {
      if (Date.parse(batch.created_at) < since) break;
      const { processing, succeeded, errored, canceled, expired } = batch.request_counts;
      const size = processing + succeeded + errored + canceled + expired;
      if (size === submission.entries.length && !claimed.has(batch.id)) found = batch.id;
    }
    return found;
  }
}
