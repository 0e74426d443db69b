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
import { BATCH_MAX_BYTES, BatchVendor } from './batches.ts';
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
  files: Omit<PlanCounts, 'asked' | 'memoised'>;
  requests: {
    /** (extractor, window) pairs a walk would ask about the changed files. */
    asked: number;
    /** Answered in the memo already. */
    memoised: number;
    /** In a batch an earlier prefill submitted and this one waited for. */
    inFlight: number;
    /** Submitted by this run (with --dry-run: that would be). */
    submitted: number;
  };
  batches: { submitted: number; resumed: number };
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
  /** Submissions with a batch at the vendor, waited for before the run ends. */
  readonly #waiting: Submission[] = [];
  /** The entries of those submissions: a key in flight is not bought again. */
  readonly #inFlight = new Set<string>();
  readonly #requests = { inFlight: 0, submitted: 0 };
  readonly #batches = { submitted: 0, resumed: 0 };
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
    if (!this.#dryRun) {
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
      }
      chunk.push(request);
      bytes += size;
    }
    if (chunk.length > 0) await this.#submit(chunk);
    await Promise.all(this.#waiting.map((submission) => this.#collect(submission)));
  }

  summary(durationMs: number): PrefillSummary {
    const { files, unchanged, changed, unreadable, asked, memoised } = this.#plan.counts;
    const tokens = this.#dryRun ? { input: this.#tokens.estimatedInput, output: 0 } : this.#tokens;
    const price = priceTokens(this.#deps.model, tokens);
    return {
      dryRun: this.#dryRun,
      model: this.#deps.model,
      files: { files, unchanged, changed, unreadable },
      requests: { asked, memoised, ...this.#requests },
      batches: { ...this.#batches },
      answers: { ...this.#answers },
      tokens: { ...this.#tokens },
      price: price === null ? null : { ...price, asOf: PRICES_AS_OF },
      durationMs: Math.round(durationMs),
    };
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
      }
      this.#batches.resumed += 1;
      this.#wait(submission);
    }
  }

  async #submit(requests: PrefillRequest[]): Promise<void> {
    this.#requests.submitted += requests.length;
    this.#tokens.estimatedInput += requests.reduce((n, r) => n + r.inputTokens, 0);
    if (this.#dryRun) return;
    const recorded = await this.#ledger.record(requests.map((r) => [r.customId, r.extractor]));
    let batchId: string;
    try {
      batchId = await this.#vendor.create(requests);
    } catch (error) {
      // A refusal made no batch; anything else may have, and the next prefill looks for it.
      if (isRefusal(error)) await this.#ledger.settle(recorded);
      throw error;
    }
    this.#batches.submitted += 1;
    this.#wait(await this.#ledger.setBatch(recorded, batchId));
  }

  #wait(submission: Submission): void {
    this.#waiting.push(submission);
    for (const [customId] of submission.entries) this.#inFlight.add(customId);
  }

  /** Waits for the submission's batch, stores its answers, then forgets it. */
  async #collect(submission: Submission): Promise<void> {
    const { store } = this.#deps;
    await this.#vendor.untilEnded(submission.batchId!);
    const extractors = new Map(submission.entries);
    for await (const entry of this.#vendor.results(submission.batchId!)) {
      const extractor = extractors.get(entry.customId);
      // An entry the submission does not name: a batch adopted by mistake (engine/prefill/batches.ts).
      if (extractor === undefined) continue;
      if (entry.kind !== 'succeeded') {
        this.#answers[entry.kind] += 1;
        continue;
      }
      this.#tokens.input += entry.message.usage.input_tokens;
      this.#tokens.output += entry.message.usage.output_tokens;
      const output = acceptedOutput(PROMPTS[extractor], entry.message);
      if (output === undefined) {
        this.#answers.invalid += 1;
        continue;
      }
      await store.putMemo(memoKeyOf(entry.customId), output);
      this.#answers.stored += 1;
    }
    await this.#ledger.settle(submission);
  }
}

/** An answer of the vendor that says no batch was made (a 4xx other than 408, 409 and 429). */
function isRefusal(error: unknown): boolean {
  const status = (error as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500 && ![408, 409, 429].includes(status);
}
