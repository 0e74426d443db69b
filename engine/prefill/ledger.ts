// The prefill's record of what it has bought and not yet stored, kept in the state store beside
// the memo it fills (the lmdb store, or the database's in a distributed deployment), so that
// nothing is bought twice (docs/DECISIONS.md "The prefill"). A submission is recorded, its
// custom_ids with it, before its batch is created; the batch's id as soon as it exists; the
// record goes once every answer it brought is in the memo. A prefill killed at any instant finds
// its submissions here on its next start: one with a batch id is polled again; one without was
// killed between the two, and its batch, if the vendor made one, is looked for there before
// anything is submitted again (engine/prefill/batches.ts).

import { randomUUID } from 'node:crypto';
import type { StateStore } from '../../lib/state/store.ts';
import type { ExtractorName } from '../../stages/extract/index.ts';

/** The memo entry listing the submissions in progress. */
const INDEX_KEY = 'prefill:submissions';
const recordKey = (id: string): string => `prefill:submission:${id}`;

export interface Submission {
  id: string;
  /** Epoch ms when it was recorded: a batch made for it was created after, by the vendor's clock within a minute. */
  recordedAt: number;
  /** Its entries: each custom_id, and the extractor whose schema its answer must fit. */
  entries: [customId: string, extractor: ExtractorName][];
  /** The vendor's batch, once created or found; null while (or if) it was not. */
  batchId: string | null;
  /** Batches found to hold none of its entries: never taken for it again. */
  notIts?: string[];
}

export class SubmissionLedger {
  readonly #store: StateStore;
  /** The index's updates, one after another: two read-modify-writes at once would lose one. */
  #indexUpdates: Promise<unknown> = Promise.resolve();

  constructor(store: StateStore) {
    this.#store = store;
  }

  /** The submissions recorded and not settled, oldest first. */
  async pending(): Promise<Submission[]> {
    const found: Submission[] = [];
    for (const id of await this.#index()) {
      const record = await this.get(id);
      if (record !== undefined) found.push(record);
    }
    return found;
  }

  /** One submission's record; undefined once settled. */
  async get(id: string): Promise<Submission | undefined> {
    return (await this.#store.getMemo(recordKey(id))) as Submission | undefined;
  }

  /** Records entries about to be submitted; resolves once durable. */
  async record(entries: Submission['entries']): Promise<Submission> {
    const submission: Submission = { id: randomUUID(), recordedAt: Date.now(), entries, batchId: null };
    // The record before the index: an index naming a missing record would be a submission lost.
    await this.#store.putMemo(recordKey(submission.id), submission);
    await this.#updateIndex((ids) => [...ids, submission.id]);
    return submission;
  }

  /** The batch made (or found) for a submission; resolves once durable. */
  async setBatch(submission: Submission, batchId: string): Promise<Submission> {
    return this.#put({ ...submission, batchId });
  }

  /** The submission's batch was not its own: it is looked for again, without that one. */
  async notItsBatch(submission: Submission): Promise<Submission> {
    const notIts = [...(submission.notIts ?? []), ...(submission.batchId === null ? [] : [submission.batchId])];
    return this.#put({ ...submission, batchId: null, notIts });
  }

  /** Forgets a submission whose answers are all stored (or were never bought). */
  async settle(submission: Submission): Promise<void> {
    await this.#updateIndex((ids) => ids.filter((id) => id !== submission.id));
    await this.#store.removeMemo(recordKey(submission.id));
  }

  async #put(submission: Submission): Promise<Submission> {
    await this.#store.putMemo(recordKey(submission.id), submission);
    return submission;
  }

  #updateIndex(change: (ids: string[]) => string[]): Promise<void> {
    const update = this.#indexUpdates.then(async () => {
      await this.#store.putMemo(INDEX_KEY, change(await this.#index()));
    });
    this.#indexUpdates = update.catch(() => {});
    return update;
  }

  async #index(): Promise<string[]> {
    const ids = await this.#store.getMemo(INDEX_KEY);
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  }
}
