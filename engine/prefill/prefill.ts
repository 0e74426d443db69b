// `ingest prefill`: the extraction memo filled ahead of a walk through the vendor's Message
// Batches API, at half the standard price (docs/OPERATIONS.md "Half price for a backfill").
//
//   resume what an earlier prefill left (engine/prefill/ledger.ts) -> plan what a walk would ask
//   and the memo lacks (engine/prefill/plan.ts) -> submit it in batches within the vendor's limits,
//   each recorded before it is created -> wait for every batch to end -> store each answer that
//   fits its schema under the key the walk looks up -> forget the submission
//
// It writes no row and takes no writer fence: walks go on meanwhile, and one that meets a window
// before its answer is stored asks for it as it always did. An answer that errored, expired, was
// canceled or does not fit its schema is not stored: the walk asks for it, synchronously.

import type { LlmClient } from '../../lib/llm/client.ts';
import { PRICES_AS_OF, priceTokens, type Price } from '../../lib/llm/prices.ts';
import { PROMPTS } from '../../lib/llm/prompts.ts';
import { acceptedOutput } from '../../lib/llm/run-extractor.ts';
import type { ExtractorName } from '../../stages/extract/index.ts';
import { BATCH_MAX_BYTES, BatchVendor, statusOf, type EntryResult } from './batches.ts';
import { SubmissionLedger, type Submission } from './ledger.ts';
import { memoKeyOf, PrefillPlan, type PlanCounts, type PlanDeps, type PrefillRequest } from './plan.ts';

export interface PrefillDeps extends PlanDeps {
  client: LlmClient;
  /** Requests in one batch at most, and how often a batch is asked whether it ended (config.prefill). */
  batchRequests: number;
  pollMs: number;
}

export interface PrefillSummary {
  dryRun: boolean;
  model: string;
  /** Why it stopped submitting before the end of its plan (the vendor's queue full); null when it did not. */
  stopped: string | null;
  files: Omit<PlanCounts, 'asked' | 'memoised'>;
  requests: {
    /** (extractor, window) pairs a walk would ask about the changed files. */
    asked: number;
    /** Answered in the memo already. */
    memoised: number;
    /** In a batch an earlier prefill submitted and this one waited for. */
    inFlight: number;
    /** Submitted by this run: none with --dry-run. */
    submitted: number;
    /** With --dry-run, what a prefill would submit now; 0 without (see submitted). */
    toSubmit: number;
  };
  /** `lost`: batches the endpoint no longer knew, forgotten (their answers are bought again later). */
  batches: { submitted: number; resumed: number; lost: number };
  answers: { stored: number; invalid: number; errored: number; canceled: number; expired: number };
  tokens: {
    /** Input tokens of the requests submitted, estimated before the vendor counts them. */
    estimatedInput: number;
    /** What the vendor counted on the answers received. */
    input: number;
    output: number;
  };
  /**
   * US dollars, at the standard and the batch rate: of the answers received, or with --dry-run
   * of the estimated input alone; null for a model the price table does not know.
   */
  price: (Price & { asOf: string }) | null;
  durationMs: number;
}

export async function prefill(
  deps: PrefillDeps,
  root: string,
  { dryRun = false }: { dryRun?: boolean } = {},
): Promise<PrefillSummary> {
  const started = performance.now();
  const run = new PrefillRun(deps, dryRun);
  await run.go(root);
  return run.summary(performance.now() - started);
}

/** One prefill's state: its submissions in flight and what it has counted. */
class PrefillRun {
  readonly #deps: PrefillDeps;
  readonly #dryRun: boolean;
  readonly #vendor: BatchVendor;
  readonly #ledger: SubmissionLedger;
  readonly #plan: PrefillPlan;
  /** Submissions with a batch at the vendor, waited for before the run ends (their entries stay in the ledger). */
  readonly #waiting: { id: string; batchId: string }[] = [];
  /** The entries of an earlier prefill's submissions: a key in flight is not bought again. */
  readonly #inFlight = new Set<string>();
  /** Why the run stopped submitting before the plan's end; null when it did not. */
  #stopped: string | null = null;
  readonly #requests = { inFlight: 0, submitted: 0, toSubmit: 0 };
  readonly #batches = { submitted: 0, resumed: 0, lost: 0 };
  readonly #answers = { stored: 0, invalid: 0, errored: 0, canceled: 0, expired: 0 };
  readonly #tokens = { estimatedInput: 0, input: 0, output: 0 };

  constructor(deps: PrefillDeps, dryRun: boolean) {
    this.#deps = deps;
    this.#dryRun = dryRun;
    this.#vendor = new BatchVendor(deps.client, deps.pollMs);
    this.#ledger = new SubmissionLedger(deps.store);
    this.#plan = new PrefillPlan(deps);
  }

  async go(root: string): Promise<void> {
    if (this.#dryRun) await this.#countInFlight();
    else {
      await this.#vendor.checkServed();
      await this.#resume();
    }
    let chunk: PrefillRequest[] = [];
    let bytes = 0;
    for await (const request of this.#plan.requests(root)) {
      if (this.#inFlight.has(request.customId)) {
        this.#requests.inFlight += 1;
        continue;
      }
      const size = Buffer.byteLength(JSON.stringify({ custom_id: request.customId, params: request.params }));
      if (chunk.length > 0 && (chunk.length >= this.#deps.batchRequests || bytes + size > BATCH_MAX_BYTES)) {
        await this.#submit(chunk);
        [chunk, bytes] = [[], 0];
        if (this.#stopped !== null) break;
      }
      chunk.push(request);
      bytes += size;
    }
    if (chunk.length > 0 && this.#stopped === null) await this.#submit(chunk);
    // Every batch is waited for even when one fails, so none is left running on a closed store.
    const collected = await Promise.allSettled(this.#waiting.map((ref) => this.#collect(ref)));
    const failed = collected.find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  summary(durationMs: number): PrefillSummary {
    const { files, unchanged, changed, unreadable, asked, memoised } = this.#plan.counts;
    const tokens = this.#dryRun ? { input: this.#tokens.estimatedInput, output: 0 } : this.#tokens;
    const price = priceTokens(this.#deps.model, tokens);
    return {
      dryRun: this.#dryRun,
      model: this.#deps.model,
      stopped: this.#stopped,
      files: { files, unchanged, changed, unreadable },
      requests: { asked, memoised, ...this.#requests },
      batches: { ...this.#batches },
      answers: { ...this.#answers },
      tokens: { ...this.#tokens },
      price: price === null ? null : { ...price, asOf: PRICES_AS_OF },
      durationMs: Math.round(durationMs),
    };
  }

  /** A dry run counts an earlier prefill's entries as in flight, without asking the vendor. */
  async #countInFlight(): Promise<void> {
    for (const submission of await this.#ledger.pending())
      for (const [customId] of submission.entries) this.#inFlight.add(customId);
  }

  /**
   * Takes up what an earlier prefill left: a submission with a batch is waited for; one whose
   * batch id was never recorded adopts the batch the vendor made for it, or is forgotten (its
   * answers are planned again below) when the vendor made none.
   */
  async #resume(): Promise<void> {
    const pending = await this.#ledger.pending();
    const claimed = new Set(pending.flatMap((s) => (s.batchId === null ? [] : [s.batchId])));
    for (let submission of pending) {
      if (submission.batchId === null) {
        const found = await this.#vendor.findUnrecorded(submission, claimed);
        if (found === null) {
          await this.#ledger.settle(submission);
          continue;
        }
        claimed.add(found);
        submission = await this.#ledger.setBatch(submission, found);
      } else if (!(await this.#vendor.knows(submission.batchId))) {
        await this.#forget(submission);
        continue;
      }
      this.#batches.resumed += 1;
      for (const [customId] of submission.entries) this.#inFlight.add(customId);
      this.#waiting.push({ id: submission.id, batchId: submission.batchId! });
    }
  }

  async #submit(requests: PrefillRequest[]): Promise<void> {
    const counted = () => {
      this.#requests[this.#dryRun ? 'toSubmit' : 'submitted'] += requests.length;
      this.#tokens.estimatedInput += requests.reduce((n, r) => n + r.inputTokens, 0);
    };
    if (this.#dryRun) return counted();
    const recorded = await this.#ledger.record(requests.map((r) => [r.customId, r.extractor]));
    let batchId: string;
    try {
      batchId = await this.#vendor.create(requests);
    } catch (error) {
      const status = statusOf(error);
      // Answers that say no batch was made settle the record; anything else (a timeout after
      // the vendor may have made it) leaves it for the next prefill to look for.
      if (status === 429 || status === 529) {
        // The vendor's queue of waiting batch requests is full, or it is overloaded: what is
        // submitted is collected, the rest is for a later run.
        await this.#ledger.settle(recorded);
        this.#stopped = `the vendor refused more batches (HTTP ${status}): run again once these have ended`;
        return;
      }
      if (status !== undefined && status >= 400 && status < 500 && ![408, 409].includes(status))
        await this.#ledger.settle(recorded);
      throw error;
    }
    counted();
    this.#batches.submitted += 1;
    await this.#ledger.setBatch(recorded, batchId);
    this.#waiting.push({ id: recorded.id, batchId });
  }

  /** Waits for a submission's batch, stores its answers, then forgets the submission. */
  async #collect(ref: { id: string; batchId: string }): Promise<void> {
    const submission = await this.#ledger.get(ref.id);
    if (submission === undefined) return;
    const extractors = new Map(submission.entries);
    let named = 0;
    try {
      await this.#vendor.untilEnded(ref.batchId);
      for await (const entry of this.#vendor.results(ref.batchId)) {
        const extractor = extractors.get(entry.customId);
        // An entry the submission does not name: a batch taken for it by mistake (engine/prefill/batches.ts).
        if (extractor === undefined) continue;
        named += 1;
        await this.#keep(entry, extractor);
      }
    } catch (error) {
      // Known at the start, gone since: forgotten as below.
      if (statusOf(error) !== 404) throw error;
      await this.#forget(submission);
      return;
    }
    if (named === 0 && submission.entries.length > 0) {
      // Not its batch after all: the next prefill looks for its own again, without this one.
      await this.#ledger.notItsBatch(submission);
      return;
    }
    await this.#ledger.settle(submission);
  }

  /**
   * A batch the endpoint no longer knows (results kept 29 days; another key, workspace or
   * endpoint) is not waited for forever: its answers are planned again, by this run when it is
   * found before the plan.
   */
  async #forget(submission: Submission): Promise<void> {
    this.#deps.log.warn({ batchId: submission.batchId }, 'prefill: the endpoint does not know this batch; forgotten');
    this.#batches.lost += 1;
    await this.#ledger.settle(submission);
  }

  async #keep(entry: EntryResult, extractor: ExtractorName): Promise<void> {
    if (entry.kind !== 'succeeded') {
      this.#answers[entry.kind] += 1;
      return;
    }
    this.#tokens.input += entry.message.usage.input_tokens;
    this.#tokens.output += entry.message.usage.output_tokens;
    const output = acceptedOutput(PROMPTS[extractor], entry.message);
    if (output === undefined) {
      this.#answers.invalid += 1;
      return;
    }
    await this.#deps.store.putMemo(memoKeyOf(entry.customId), output);
    this.#answers.stored += 1;
  }
}
