// The budget's place in a model client: the fetch both SDKs send through (their `fetch` option),
// so every call of a budgeted client debits the budget whoever makes it (an extractor, the
// embedder, the resolver, the producer, the bid-worker) and the retry around it stays as it is
// (lib/llm/retry.ts): a retry is another request and debits again. Before the request: wait for
// the request and its estimated tokens; after: correct the estimate from the answer's usage; on
// a 429, pause the budget for every process until its Retry-After (the retry waits it too).

import type { ModelBudget } from './budget.ts';
import { DEFAULT_PAUSE_MS } from './budget.ts';
import { parseRetryAfter } from '../retry.ts';

/** What the budget reads of one provider's requests and answers. */
export interface Meter {
  /** A request's model, kind, estimated input tokens and output ceiling; null for one not metered. */
  request(body: Record<string, unknown>): { model: string; kind: string; input: number; maxOutput: number } | null;
  /** The tokens an answer says it used; null when it does not say. */
  used(body: Record<string, unknown>): { input: number; output: number } | null;
}

/** A rough count before the provider's own (about four characters a token); the answer corrects it. */
const roughTokens = (value: unknown) => Math.ceil(JSON.stringify(value ?? '').length / 4);
const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/** /v1/messages: system, tools and messages count as input; `usage` answers. */
export const anthropicMeter: Meter = {
  request(body) {
    if (typeof body.model !== 'string' || !Array.isArray(body.messages)) return null;
    const tool = (body.tool_choice as { name?: unknown } | undefined)?.name;
    return {
      model: body.model,
      kind: typeof tool === 'string' ? tool : 'text',
      input: roughTokens([body.system ?? '', body.tools ?? [], body.messages]),
      maxOutput: count(body.max_tokens),
    };
  },
  used(body) {
    const usage = body.usage as Record<string, unknown> | undefined;
    if (usage === undefined || typeof usage.input_tokens !== 'number') return null;
    return { input: count(usage.input_tokens), output: count(usage.output_tokens) };
  },
};

/** /v1/embeddings: the inputs count, nothing is output; `usage.prompt_tokens` answers. */
export const openAiMeter: Meter = {
  request(body) {
    if (typeof body.model !== 'string' || body.input === undefined) return null;
    const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
    const input = inputs.reduce<number>((n, text) => n + roughTokens(text), 0);
    return { model: body.model, kind: 'embedding', input, maxOutput: 0 };
  },
  used(body) {
    const usage = body.usage as Record<string, unknown> | undefined;
    if (usage === undefined || typeof usage.prompt_tokens !== 'number') return null;
    return { input: count(usage.prompt_tokens), output: 0 };
  },
};

function jsonBody(body: unknown): Record<string, unknown> | null {
  if (typeof body !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(body);
    return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** `inner` (the global fetch) behind `budget`, read through `meter`. */
export function budgetedFetch(budget: ModelBudget, meter: Meter, inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const body = jsonBody(init?.body);
    const request = body === null ? null : meter.request(body);
    if (request === null) return inner(input, init);
    const signal = init?.signal ?? undefined;
    const debit = await budget.acquire(request.model, request.kind, budget.estimate(request), signal);
    // A request that fails on the way keeps its debit: the provider may have counted it.
    const response = await inner(input, init);
    if (response.status === 429) {
      const wait = parseRetryAfter(response.headers.get('retry-after')) ?? DEFAULT_PAUSE_MS;
      await budget.pause(request.model, wait);
    } else if (response.ok && response.headers.get('content-type')?.includes('application/json')) {
      // A streamed answer keeps its estimate: its usage arrives in events the SDK reads.
      const used = meter.used((await response.clone().json()) as Record<string, unknown>);
      if (used !== null) await budget.settle(debit, used);
    }
    return response;
  };
}
