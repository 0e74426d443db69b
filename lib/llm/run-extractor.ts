// One memoised extractor call (docs/behaviour/states.md#memo-and-stamping):
//
//   memo key  = sha256 of (extractor, prompt version, LLM identity, input text); the identity
//               is a required argument, so one identity's memo never serves another's
//   memo hit  = the stored value, validated against the schema; an invalid value is deleted,
//               recomputed and counted as memo_heal (the self-heal wrapper)
//   model call = the extractor's tool forced, through the service's retry wrapper; an output
//               that fails the schema gets one corrective re-ask, then the call fails

import type PQueue from 'p-queue';
import { sha256Hex } from '../hash.ts';
import type { LlmClient, LlmMessage, LlmRequest, LlmToolSchema, LlmToolUse } from './client.ts';
import type { StateStore } from '../state/store.ts';
import { currentRunContext, type RunContext } from '../run-context.ts';
import type { ExtractorPrompt } from './prompts.ts';
import { withRetry, type RetryPolicy } from './retry.ts';
import { validator, type Validator } from './schemas.ts';
import { IngestError } from '../errors.ts';

const MAX_OUTPUT_TOKENS = 4096;

export class ExtractionError extends IngestError {
  constructor(extractor: string, detail: string) {
    super(
      'invalid_output',
      `${extractor}: the model's output does not fit the schema after a corrective re-ask (${detail})`,
    );
  }
}

export interface ExtractorContext {
  client: LlmClient;
  model: string;
  /** `{base_url}:{model}` (lib/llm/client.ts llmIdentity). */
  identity: string;
  /** The memos only: the extractor reads, heals and writes its entries, nothing else. */
  store: Pick<StateStore, 'getMemo' | 'putMemo' | 'removeMemo'>;
  /**
   * Bounds the model calls in flight across the whole walk. A slot is held for the request
   * alone (its retries included), never for the memo read or write around it: a slot held
   * through a disk commit is model concurrency lost (Little's law, bench/README.md).
   */
  queue: PQueue;
  retry?: RetryPolicy;
  /**
   * The run whose counters and full_reprocess flag apply; by default the current walk's. The
   * producer passes its own, since it may run while a walk does.
   */
  run?: RunContext;
}

const validators = new Map<string, Validator<unknown>>();
function validatorFor(prompt: ExtractorPrompt): Validator<unknown> {
  let v = validators.get(prompt.name);
  if (v === undefined) validators.set(prompt.name, (v = validator(prompt.schema)));
  return v;
}

export function extractorMemoKey(prompt: ExtractorPrompt, identity: string, text: string): string {
  const digest = sha256Hex(JSON.stringify([prompt.name, prompt.version, identity, text]));
  return `extract:${digest}`;
}

export async function runExtractor<T>(prompt: ExtractorPrompt, text: string, context: ExtractorContext): Promise<T> {
  const valid = validatorFor(prompt);
  const key = extractorMemoKey(prompt, context.identity, text);
  const run = context.run ?? currentRunContext();
  // full_reprocess bypasses the memo (and refreshes it below).
  if (!run.fullReprocess) {
    const memo = await context.store.getMemo(key);
    if (memo !== undefined) {
      if (valid(memo)) return memo as T;
      await context.store.removeMemo(key);
      run.counters.memo_heal += 1;
    }
  }
  const output = await callModel(prompt, text, context, valid, () => (run.counters.model_retry += 1));
  await context.store.putMemo(key, output);
  return output as T;
}

/** What one model call needs: the client, the model and the queue bounding calls in flight. */
export type ModelCallContext = Pick<ExtractorContext, 'client' | 'model' | 'queue' | 'retry'>;

/**
 * One prompt's tool call, validated, with the corrective re-ask, and no memo: for callers
 * outside a walk (the bid-worker), which hear of retries through `onRetry`.
 */
export async function askModel<T>(
  prompt: ExtractorPrompt,
  text: string,
  context: ModelCallContext,
  onRetry: () => void = () => {},
): Promise<T> {
  return (await callModel(prompt, text, context, validatorFor(prompt), onRetry)) as T;
}

async function callModel(
  prompt: ExtractorPrompt,
  text: string,
  context: ModelCallContext,
  valid: Validator<unknown>,
  onRetry: () => void,
): Promise<unknown> {
  const request = extractorRequest(prompt, text, context.model);
  const ask = () =>
    context.queue.add(() =>
      withRetry((signal) => context.client.messages.create(request, { signal }), context.retry, onRetry, prompt.tool),
    );
  const first = await ask();
  const firstCall = toolCall(first, prompt.tool);
  if (firstCall !== undefined && valid(firstCall.input)) return firstCall.input;
  // One corrective re-ask: show the model its own call and what was wrong with it.
  const problem = firstCall === undefined ? `no ${prompt.tool} call in the answer` : valid.explain();
  request.messages.push(
    { role: 'assistant', content: first.content },
    firstCall === undefined
      ? { role: 'user', content: `Call ${prompt.tool}. ${problem}.` }
      : {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: firstCall.id,
              is_error: true,
              content: `Invalid input: ${problem}. Call ${prompt.tool} again with input that fits its schema.`,
            },
          ],
        },
  );
  const second = toolCall(await ask(), prompt.tool);
  if (second !== undefined && valid(second.input)) return second.input;
  throw new ExtractionError(prompt.name, second === undefined ? 'no tool call' : valid.explain());
}

/** The one request an extractor's first call sends (a batch sends the same, engine/prefill/). */
export function extractorRequest(prompt: ExtractorPrompt, text: string, model: string): LlmRequest {
  return {
    model,
    max_tokens: MAX_OUTPUT_TOKENS,
    system: prompt.system,
    tools: [
      {
        name: prompt.tool,
        description: prompt.description,
        input_schema: prompt.schema as unknown as LlmToolSchema,
      },
    ],
    tool_choice: { type: 'tool', name: prompt.tool },
    messages: [{ role: 'user', content: text }],
  };
}

/**
 * What a walk would memoise of an answer to `extractorRequest`: its tool call's input when that
 * fits the schema, else undefined (the walk's corrective re-ask is not made here).
 */
export function acceptedOutput(prompt: ExtractorPrompt, message: LlmMessage): unknown {
  const call = toolCall(message, prompt.tool);
  return call !== undefined && fitsSchema(prompt, call.input) ? call.input : undefined;
}

/** Whether a memo value is one the walk takes as a HIT (not one it heals and asks again). */
export function fitsSchema(prompt: ExtractorPrompt, value: unknown): boolean {
  return validatorFor(prompt)(value);
}

function toolCall(message: LlmMessage, tool: string): LlmToolUse | undefined {
  return message.content.find((block): block is LlmToolUse => block.type === 'tool_use' && block.name === tool);
}
