// The mock model server, driven by the real SDK clients the service uses.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { mockEmbedding } from '../mock/embeddings.ts';
import { entities } from '../mock/extractors.ts';
import { names } from '../mock/names.ts';
import { editDistance, resolvePair } from '../mock/pair-resolver.ts';
import type { MessagesRequest } from '../mock/messages.ts';
import { FAILURE_SENTINEL, startMockServer, type MockServer } from '../mock/server.ts';

const PROMPT = 'You classify documents. Answer with the classify tool.';
const TOOL = {
  name: 'classify',
  description: 'Record the classification',
  input_schema: { type: 'object' as const, properties: { label: { type: 'string' } }, required: ['label'] },
};
const prompts = new Map([
  [PROMPT, (request: MessagesRequest) => ({ label: `seen ${request.messages.length} message(s)` })],
]);

let mock: MockServer;
test.before(async () => {
  mock = await startMockServer({ prompts });
});
test.after(() => mock.close());

const anthropic = (apiKey = 'mock-key') => new Anthropic({ baseURL: mock.url, apiKey, maxRetries: 0 });
const openai = (apiKey = 'mock-key') => new OpenAI({ baseURL: `${mock.url}/v1`, apiKey, maxRetries: 0 });
const ask = {
  model: 'claude-test',
  max_tokens: 256,
  system: PROMPT,
  tools: [TOOL],
  tool_choice: { type: 'tool' as const, name: 'classify' },
  messages: [{ role: 'user' as const, content: 'A policy document.' }],
};

test('a registered prompt gets the tool call its responder builds', async () => {
  const message = await anthropic().messages.create(ask);
  assert.is(message.stop_reason, 'end_turn');
  const block = message.content[0];
  assert.is(block?.type, 'tool_use');
  assert.equal((block as Anthropic.ToolUseBlock).input, { label: 'seen 1 message(s)' });
});

test('the stream uses the full event grammar and parses with the SDK’s streaming helper', async () => {
  const events: string[] = [];
  const stream = anthropic().messages.stream(ask);
  stream.on('streamEvent', (event) => events.push(event.type));
  const message = await stream.finalMessage();
  assert.equal((message.content[0] as Anthropic.ToolUseBlock).input, { label: 'seen 1 message(s)' });
  assert.is(message.stop_reason, 'end_turn');
  assert.is(events[0], 'message_start');
  assert.is(events.at(-1), 'message_stop');
  for (const type of ['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta'])
    assert.ok(events.includes(type), type);
  const text = await anthropic()
    .messages.stream({ model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'ping' }] })
    .finalText();
  assert.is(text, 'pong');
});

test('no system block: the preflight ping gets "pong"', async () => {
  const message = await anthropic().messages.create({
    model: 'claude-test',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'ping' }],
  });
  assert.is(message.content.length, 1);
  assert.is((message.content[0] as Anthropic.TextBlock).text, 'pong');
});

test('an unrecognised system prompt is a 400 that names the mock', async () => {
  try {
    await anthropic().messages.create({ ...ask, system: `${PROMPT} ` });
    assert.unreachable('expected a 400');
  } catch (error) {
    assert.instance(error, Anthropic.BadRequestError);
    assert.match((error as Error).message, /mock model server: unrecognised system prompt/);
  }
});

test('the failure-injection sentinel is refused with 401 on both APIs', async () => {
  await anthropic(FAILURE_SENTINEL)
    .messages.create(ask)
    .then(
      () => assert.unreachable('expected 401'),
      (error: unknown) => assert.instance(error, Anthropic.AuthenticationError),
    );
  await openai(FAILURE_SENTINEL)
    .embeddings.create({ model: 'text-embedding-3-large', input: 'x' })
    .then(
      () => assert.unreachable('expected 401'),
      (error: unknown) => assert.instance(error, OpenAI.AuthenticationError),
    );
});

test('with an auth token the mock accepts that credential only, as the vendor or a gateway would', async () => {
  const TOKEN = 'the-one-mock-credential';
  const guarded = await startMockServer({ prompts, authToken: TOKEN });
  try {
    const ping = { model: 'claude-test', max_tokens: 8, messages: [{ role: 'user' as const, content: 'ping' }] };
    const vendor = (apiKey: string) => new Anthropic({ baseURL: guarded.url, apiKey, maxRetries: 0 });
    const gateway = (authToken: string) =>
      new Anthropic({ baseURL: guarded.url, apiKey: null, authToken, maxRetries: 0 });
    // The right credential, as x-api-key (vendor) or as the bearer (gateway): served.
    assert.is(((await vendor(TOKEN).messages.create(ping)).content[0] as Anthropic.TextBlock).text, 'pong');
    assert.is(((await gateway(TOKEN).messages.create(ping)).content[0] as Anthropic.TextBlock).text, 'pong');
    // A wrong one, on either header and either API: 401 authentication_error, the credential never echoed.
    for (const call of [
      () => vendor('wrong-credential-1').messages.create(ping),
      () => gateway('wrong-credential-2').messages.create(ping),
      () => gateway(`${TOKEN}x`).messages.create(ping),
    ]) {
      await call().then(
        () => assert.unreachable('expected 401'),
        (error: unknown) => {
          assert.instance(error, Anthropic.AuthenticationError);
          const body = (error as { error?: { type?: string; error?: { type?: string; message?: string } } }).error;
          assert.is(body?.type, 'error');
          assert.is(body?.error?.type, 'authentication_error');
          assert.not.match(JSON.stringify(body), /wrong-credential|the-one-mock-credentialx/);
        },
      );
    }
    await new OpenAI({ baseURL: `${guarded.url}/v1`, apiKey: 'wrong-credential-3', maxRetries: 0 }).embeddings
      .create({ model: 'text-embedding-3-large', input: 'x' })
      .then(
        () => assert.unreachable('expected 401'),
        (error: unknown) => assert.instance(error, OpenAI.AuthenticationError),
      );
    const embedded = await new OpenAI({ baseURL: `${guarded.url}/v1`, apiKey: TOKEN, maxRetries: 0 }).embeddings.create(
      {
        model: 'text-embedding-3-large',
        input: 'x',
      },
    );
    assert.is(embedded.data.length, 1);
    // No credential at all is refused too; /health (the tier-1 gate) stays open.
    const bare = await fetch(`${guarded.url}/v1/messages`, { method: 'POST', body: JSON.stringify(ping) });
    assert.is(bare.status, 401);
    assert.is(((await bare.json()) as { error: { type: string } }).error.type, 'authentication_error');
    const health = await fetch(`${guarded.url}/health`);
    assert.is(health.status, 200);
    assert.equal(
      [guarded.stats.messages, guarded.stats.embeddings, guarded.stats.unauthorized],
      [2, 1, 5],
      'only the right credential was served',
    );
  } finally {
    await guarded.close();
  }
  // Without the option any credential is accepted (tier 1: the key is never validated).
  const open = await anthropic('anything-at-all').messages.create({
    model: 'claude-test',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'ping' }],
  });
  assert.is((open.content[0] as Anthropic.TextBlock).text, 'pong');
});

test('embeddings: 1024 dimensions as the SDK decodes them (base64 by default, float on request)', async () => {
  const inputs = [
    'Ada Lovelace founded Northwind Traders',
    'Ada Lovelace co-founded Northwind Traders',
    'quarterly weather in Lisbon',
  ];
  const base64 = await openai().embeddings.create({ model: 'text-embedding-3-large', dimensions: 1024, input: inputs });
  const floats = await openai().embeddings.create({
    model: 'text-embedding-3-large',
    dimensions: 1024,
    input: inputs,
    encoding_format: 'float',
  });
  const vectors = base64.data.map((d) => d.embedding);
  assert.is(vectors.length, 3);
  for (const v of vectors) {
    assert.is(v.length, 1024);
    assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5, 'unit length');
  }
  assert.equal(
    floats.data.map((d) => Float32Array.from(d.embedding)),
    vectors.map((v) => Float32Array.from(v)),
  );
  assert.equal(Float32Array.from(vectors[0]!), mockEmbedding(inputs[0]!, 1024), 'deterministic');
  const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
  assert.ok(dot(vectors[0]!, vectors[1]!) > dot(vectors[0]!, vectors[2]!) + 0.3, 'similar texts are closer');
});

test('embeddings refuse empty strings and oversized batches', async () => {
  for (const input of [[''], Array.from({ length: 2049 }, () => 'x')]) {
    await openai()
      .embeddings.create({ model: 'text-embedding-3-large', input })
      .then(
        () => assert.unreachable('expected 400'),
        (error: unknown) => assert.instance(error, OpenAI.BadRequestError),
      );
  }
});

test('the mock entity extractor finds names within a line, never across a heading and the next line', () => {
  assert.equal(names('# Contract\n\nNorthwind Traders signed with Ada Lovelace.\nGrace Hopper\nagreed.'), [
    'Northwind Traders',
    'Ada Lovelace',
    'Grace Hopper',
  ]);
});

test('the mock pair resolver decides from the names: the closest within an edit per eight letters, or none', () => {
  const ask = (name: string, candidates: string[]) =>
    resolvePair(
      `Type: organization\nName: ${name}\nCandidates:\n${candidates.map((c, i) => `${i + 1}. ${c} (organization)`).join('\n')}`,
    );
  assert.is(ask('Nortwind Traders', ['Northwind Bank', 'Northwind Traders']).match, 2);
  assert.is(ask('Northwind Traders Ltd', ['Northwind Traders']).match, 1);
  assert.is(ask('Northwind Bank', ['Northwind Traders', 'Contoso Bank']).match, null);
  assert.is(ask('Ada Lovelace', []).match, null);
  assert.is(editDistance('northwind', 'nrothwind'), 1, 'an adjacent swap is one edit');
});

test('the mock extractor types a name ending in a legal form as an organisation', () => {
  const typed = entities('Acme Corporation sued Globex Limited and Initech Plc, said Jane Smith.').entities;
  assert.equal(
    typed.map((e) => [e.canonical_name, e.type]),
    [
      ['Acme Corporation', 'organization'],
      ['Globex Limited', 'organization'],
      ['Initech Plc', 'organization'],
      ['Jane Smith', 'person'],
    ],
  );
});

test('the mock extractor leaves a leading month or weekday out of a name', () => {
  assert.equal(names('in March Ada Lovelace wrote the report; on Tuesday Grace Hopper read it.'), [
    'Ada Lovelace',
    'Grace Hopper',
  ]);
  assert.equal(names('on Monday Ada wrote. Northwind Traders opened.'), ['Northwind Traders'], 'no one-word name left');
  assert.equal(names('Dr Jane Smith came.'), ['Dr Jane Smith'], 'a title stays: resolution reads it');
});

test('the mock pair resolver joins a name of another type only when the root shows its type and the name none', () => {
  const ask = (type: string, name: string, candidates: [string, string][]) =>
    resolvePair(
      `Type: ${type}\nName: ${name}\nCandidates:\n${candidates.map(([c, t], i) => `${i + 1}. ${c} (${t})`).join('\n')}`,
    ).match;
  assert.is(ask('person', 'Northwind Tradres', [['Northwind Traders', 'organization']]), 1);
  assert.is(ask('person', 'Jordan', [['Jordan', 'location']]), null, 'a person and a country called Jordan');
  assert.is(ask('location', 'Jordan', [['Jordan', 'person']]), null);
  assert.is(ask('person', 'Mr Hamilton Banks', [['Hamilton Bank', 'organization']]), null, 'a title shows a person');
  assert.is(ask('person', 'Dr Jane Smith', [['Jane Smith', 'person']]), 1, 'titles aside');
});

test('counters record the calls served', async () => {
  const fresh = await startMockServer({ prompts });
  try {
    assert.equal([fresh.stats.messages, fresh.stats.embeddings], [0, 0]);
    await new Anthropic({ baseURL: fresh.url, apiKey: 'k', maxRetries: 0 }).messages.create(ask);
    await new OpenAI({ baseURL: `${fresh.url}/v1`, apiKey: 'k', maxRetries: 0 }).embeddings.create({
      model: 'm',
      input: ['a', 'b'],
    });
    assert.equal([fresh.stats.messages, fresh.stats.embeddings, fresh.stats.embeddedTexts], [1, 1, 2]);
  } finally {
    await fresh.close();
  }
});

test.run();
