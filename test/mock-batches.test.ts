// The mock's Message Batches API (mock/batches.ts), driven by the real SDK client a prefill uses:
// a batch's life from in progress to ended, its results against what /v1/messages answers, the
// seeded split of errored and expired requests, the list's pages, a cancel, the vendor's
// validation, the credential check, and the `ingest mock --batch-*` flags. No batch answer
// counts as a /v1/messages call.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import type { MessagesRequest } from '../mock/messages.ts';
import { startMockServer, type MockOptions, type MockServer } from '../mock/server.ts';
import { BIN, listeningUrl } from './helpers/cli.ts';

type Result = Anthropic.Messages.MessageBatchResult;

const PROMPT = 'You label documents. Answer with the label tool.';
const TOOL = {
  name: 'label',
  description: 'Record the label',
  input_schema: { type: 'object' as const, properties: { label: { type: 'string' } }, required: ['label'] },
};
const prompts = new Map([
  [PROMPT, (request: MessagesRequest) => ({ label: `label of ${request.messages[0]?.content}` })],
]);

const params = (text: string, system = PROMPT) => ({
  model: 'claude-test',
  max_tokens: 256,
  system,
  tools: [TOOL],
  tool_choice: { type: 'tool' as const, name: 'label' },
  messages: [{ role: 'user' as const, content: text }],
});
const requests = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ custom_id: `doc-${i}`, params: params(`document ${i}`) }));

const client = (mock: MockServer, apiKey = 'k') => new Anthropic({ baseURL: mock.url, apiKey, maxRetries: 0 });

/** Runs `body` against a mock of its own; no batch may have counted as a /v1/messages call. */
async function withMock(options: MockOptions, body: (mock: MockServer, sdk: Anthropic) => Promise<void>) {
  const mock = await startMockServer({ prompts, ...options });
  try {
    await body(mock, client(mock));
    assert.is(mock.stats.messages, 0, 'batch answers are not /v1/messages calls');
  } finally {
    await mock.close();
  }
}

/** Polls until the batch has ended, as a prefill does. */
async function ended(sdk: Anthropic, id: string): Promise<Anthropic.Messages.MessageBatch> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    const batch = await sdk.messages.batches.retrieve(id);
    if (batch.processing_status === 'ended') return batch;
    await sleep(10);
  }
  throw new Error(`batch ${id} never ended`);
}

/** Every result of a batch by custom_id; each custom_id must come once. */
async function results(sdk: Anthropic, id: string): Promise<Map<string, Result>> {
  const out = new Map<string, Result>();
  for await (const line of await sdk.messages.batches.results(id)) {
    assert.not.ok(out.has(line.custom_id), `${line.custom_id} once`);
    out.set(line.custom_id, line.result);
  }
  return out;
}

/** The request counts the results add up to. */
function tally(all: Map<string, Result>): Anthropic.Messages.MessageBatchRequestCounts {
  const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
  for (const result of all.values()) counts[result.type] += 1;
  return counts;
}

/** The status, error type and message of the API error `call` throws, as the SDK parsed them. */
async function refusal(call: () => Promise<unknown>): Promise<{ status?: number; type?: string; message?: string }> {
  try {
    await call();
  } catch (error) {
    assert.instance(error, Anthropic.APIError);
    const { status, error: body } = error as InstanceType<typeof Anthropic.APIError>;
    return { status, ...(body as { error?: { type: string; message: string } }).error };
  }
  throw new Error('expected an API error');
}

/** A message with its ids blanked: they are the only part a batch answer may differ in. */
const withoutIds = (message: Anthropic.Message) => ({
  ...message,
  id: '',
  content: message.content.map((block) => (block.type === 'tool_use' ? { ...block, id: '' } : block)),
});

test('a batch is in progress until its delay has passed, then ended with its counts and results', async () => {
  const reference = await startMockServer({ prompts });
  await withMock({ batches: { delayMs: 1000 } }, async (mock, sdk) => {
    const unknown = { custom_id: 'unknown-prompt', params: params('x', 'Some other prompt.') };
    const created = await sdk.messages.batches.create({ requests: [...requests(3), unknown] });
    assert.match(created.id, /^msgbatch_/);
    const createdAt = Date.parse(created.created_at);
    assert.equal(
      { ...created, id: '', created_at: '' },
      {
        id: '',
        type: 'message_batch',
        processing_status: 'in_progress',
        request_counts: { processing: 4, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
        created_at: '',
        expires_at: new Date(createdAt + 24 * 3600 * 1000).toISOString(),
        ended_at: null,
        archived_at: null,
        cancel_initiated_at: null,
        results_url: null,
      },
    );
    assert.is((await sdk.messages.batches.retrieve(created.id)).processing_status, 'in_progress');
    const early = await fetch(`${mock.url}/v1/messages/batches/${created.id}/results`, {
      headers: { 'x-api-key': 'k' },
    });
    assert.is(early.status, 400);
    assert.match(((await early.json()) as { error: { message: string } }).error.message, /in_progress/);

    const batch = await ended(sdk, created.id);
    assert.ok(Date.parse(batch.ended_at!) >= createdAt + 1000, 'not before its delay');
    assert.equal(batch.request_counts, { processing: 0, succeeded: 3, errored: 1, canceled: 0, expired: 0 });
    assert.is(batch.results_url, `${mock.url}/v1/messages/batches/${created.id}/results`);

    const all = await results(sdk, created.id);
    assert.equal([...all.keys()].sort(), ['doc-0', 'doc-1', 'doc-2', 'unknown-prompt']);
    const succeeded = all.get('doc-1');
    assert.is(succeeded?.type, 'succeeded');
    const direct = await client(reference).messages.create(params('document 1'));
    assert.equal(withoutIds((succeeded as Anthropic.Messages.MessageBatchSucceededResult).message), withoutIds(direct));
    assert.equal((direct.content[0] as Anthropic.ToolUseBlock).input, { label: 'label of document 1' });
    assert.equal(reference.stats.messagesByTool, { label: 1 }, 'a direct call counts by its tool');
    const refused = all.get('unknown-prompt') as Anthropic.Messages.MessageBatchErroredResult;
    assert.is(refused.type, 'errored');
    assert.is(refused.error.error.type, 'invalid_request_error');
    assert.match(refused.error.error.message, /unrecognised system prompt/);
    assert.equal(
      [mock.stats.batches, mock.stats.batchRequests, mock.stats.batchSucceeded],
      [1, 4, 3],
      'batches, requests, successes',
    );
  }).finally(() => reference.close());
});

test('the error and expiry rates split a batch by a seeded draw: the counts match and a seed replays', async () => {
  const fates = async (seed: number) => {
    let out = new Map<string, Result>();
    await withMock({ seed, batches: { errorRate: 0.3, expireRate: 0.3 } }, async (mock, sdk) => {
      const batch = await ended(sdk, (await sdk.messages.batches.create({ requests: requests(40) })).id);
      out = await results(sdk, batch.id);
      const counts = tally(out);
      assert.equal(counts, batch.request_counts);
      for (const kind of ['succeeded', 'errored', 'expired'] as const) assert.ok(counts[kind] > 0, kind);
      assert.is(mock.stats.batchSucceeded, counts.succeeded);
      for (const result of out.values()) if (result.type === 'errored') assert.is(result.error.error.type, 'api_error');
    });
    return [...out].map(([id, result]) => `${id}:${result.type}`);
  };
  const first = await fates(7);
  assert.equal(await fates(7), first, 'the same seed, the same fates');
  assert.not.equal(await fates(8), first, 'another seed, another split');
});

test('the list is newest first across pages; after_id goes back in time, before_id forward', async () => {
  await withMock({}, async (_mock, sdk) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await sdk.messages.batches.create({ requests: requests(1) })).id);
    const newest = ids.toReversed();
    const first = await sdk.messages.batches.list({ limit: 2 });
    assert.equal(
      first.data.map((b) => b.id),
      newest.slice(0, 2),
    );
    assert.ok(first.has_more);
    const seen: string[] = [];
    let pages = 0;
    for await (const page of first.iterPages()) {
      pages += 1;
      seen.push(...page.data.map((b) => b.id));
    }
    assert.equal(seen, newest);
    assert.is(pages, 3);
    const forward = await sdk.messages.batches.list({ limit: 2, before_id: ids[1]! });
    assert.equal(
      forward.data.map((b) => b.id),
      [ids[3], ids[2]],
    );
    assert.equal(
      forward.data.map((b) => b.processing_status),
      ['ended', 'ended'],
    );
    assert.is((await refusal(() => sdk.messages.batches.list({ after_id: 'msgbatch_gone' }))).status, 404);
  });
});

test('a cancel ends a batch in progress with every request canceled', async () => {
  await withMock({ batches: { delayMs: 60_000 } }, async (mock, sdk) => {
    const { id } = await sdk.messages.batches.create({ requests: requests(3) });
    const canceling = await sdk.messages.batches.cancel(id);
    assert.is(canceling.processing_status, 'canceling');
    assert.type(canceling.cancel_initiated_at, 'string');
    await sleep(5);
    const batch = await ended(sdk, id);
    assert.equal(batch.request_counts, { processing: 0, succeeded: 0, errored: 0, canceled: 3, expired: 0 });
    assert.is(batch.cancel_initiated_at, canceling.cancel_initiated_at);
    assert.equal(
      [...(await results(sdk, id)).values()].map((r) => r.type),
      ['canceled', 'canceled', 'canceled'],
    );
    const again = await refusal(() => sdk.messages.batches.cancel(id));
    assert.is(again.status, 400);
    assert.match(again.message ?? '', /has ended/);
    assert.is(mock.stats.batchSucceeded, 0);
  });
});

test('a batch the vendor would refuse is a 400 with a message, and nothing is created', async () => {
  await withMock({ batches: { maxRequests: 3, maxBytes: 4096 } }, async (mock, sdk) => {
    const [one, two] = requests(2);
    const create = (body: unknown) => () => sdk.messages.batches.create(body as Anthropic.Messages.BatchCreateParams);
    const cases: [unknown, RegExp][] = [
      [{ requests: [one, { ...two, custom_id: one!.custom_id }] }, /custom_id "doc-0" is used twice/],
      [{ requests: requests(4) }, /at most 3 requests; this one has 4/],
      [{ requests: [{ ...one, custom_id: 'has space' }] }, /custom_id must match/],
      [{ requests: [{ ...one, custom_id: 'x'.repeat(65) }] }, /custom_id must match/],
      [{ requests: [] }, /non-empty array/],
      [{ requests: [{ custom_id: 'no-params' }] }, /params must be an object/],
      [{ requests: [{ custom_id: 'big', params: params('y'.repeat(5000)) }] }, /exceeds the limit of 4096/],
    ];
    for (const [body, message] of cases) {
      const refused = await refusal(create(body));
      assert.equal([refused.status, refused.type], [400, 'invalid_request_error'], String(message));
      assert.match(refused.message ?? '', message);
    }
    const unknown = await refusal(() => sdk.messages.batches.retrieve('msgbatch_nothing'));
    assert.equal([unknown.status, unknown.type], [404, 'not_found_error']);
    assert.equal((await sdk.messages.batches.list()).data, []);
    assert.is(mock.stats.batches, 0);
    assert.is(mock.stats.batchRequests, 0);
  });
});

test('a batch body may pass the 32 MB cap of /v1/messages, which keeps it', async () => {
  await withMock({}, async (mock, sdk) => {
    const big = params('z'.repeat(33 * 1024 * 1024));
    const batch = await sdk.messages.batches.create({ requests: [{ custom_id: 'big', params: big }] });
    assert.is(batch.request_counts.processing, 1);
    const refused = await refusal(() => sdk.messages.create(big));
    assert.is(refused.status, 400);
    assert.match(refused.message ?? '', /exceeds the limit of 33554432/);
    assert.is(mock.stats.batches, 1);
  });
});

test('the batch routes sit behind the credential check', async () => {
  await withMock({ authToken: 'right' }, async (mock) => {
    const wrong = client(mock, 'wrong');
    const refused = await refusal(() => wrong.messages.batches.create({ requests: requests(1) }));
    assert.equal([refused.status, refused.type], [401, 'authentication_error']);
    assert.is((await refusal(() => wrong.messages.batches.list())).status, 401);
    assert.is(mock.stats.batches, 0);
    const { id } = await client(mock, 'right').messages.batches.create({ requests: requests(1) });
    assert.is(mock.stats.batches, 1);
    assert.is((await refusal(() => wrong.messages.batches.retrieve(id))).status, 401);
    assert.is((await refusal(() => wrong.messages.batches.results(id))).status, 401);
    assert.is(mock.stats.unauthorized, 4);
  });
});

/**
 * `ingest mock ARGS` in a child, its exit status and stderr; a mock that starts when it should
 * have refused its flags is killed after a while, so that the test fails rather than hangs.
 */
function ingestMock(args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'mock', '--port', '0', ...args], {
      env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'silent' },
      timeout: 20_000,
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

test('ingest mock --batch-*: the knobs from its flags; a malformed one is a usage error', async () => {
  const child = spawn(
    process.execPath,
    [BIN, 'mock', '--port', '0', '--batch-delay-ms', '1000', '--batch-error-rate', '1'],
    { env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'silent' } },
  );
  try {
    const sdk = new Anthropic({ baseURL: await listeningUrl(child), apiKey: 'k', maxRetries: 0 });
    const { id } = await sdk.messages.batches.create({ requests: requests(2) });
    assert.is((await sdk.messages.batches.retrieve(id)).processing_status, 'in_progress');
    const batch = await ended(sdk, id);
    assert.is(batch.request_counts.errored, 2);
  } finally {
    child.kill('SIGTERM');
  }
  for (const bad of [
    ['--batch-delay-ms', 'x'],
    ['--batch-delay-ms=-1'],
    ['--batch-error-rate', '1.5'],
    ['--batch-expire-rate', 'often'],
    ['--batch-error-rate', '0.6', '--batch-expire-rate', '0.6'],
  ]) {
    const run = await ingestMock(bad);
    assert.is(run.status, 2, bad.join(' '));
    assert.match(run.stderr, /--batch-delay-ms must be/);
  }
});

test.run();
