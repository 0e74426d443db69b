// The HTTP layer's parts that need no server: bearer checks, destPath rules, the walk registry.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { IncomingMessage } from 'node:http';
import { bearerMatches, requireBearer } from '../http/auth.ts';
import { HttpError } from '../http/errors.ts';
import { parseStagePath } from '../http/stage-path.ts';
import { isLoopback } from '../http/auth.ts';
import { Type } from '@sinclair/typebox';
import { checkJsonBody, jsonBody } from '../http/body.ts';
import { WalkRegistry } from '../http/walk-registry.ts';
import { breaks, FAILURE_SENTINEL, FailureDirective } from '../lib/failure-directive.ts';
import { createEmbeddingClient } from '../lib/embed/client.ts';
import { createLlmClient } from '../lib/llm/client.ts';

function refusal(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (error) {
    assert.instance(error, HttpError);
    return error as HttpError;
  }
  assert.unreachable('expected an HttpError');
  throw new Error('unreachable');
}

test('bearer: exact token only, case-insensitive scheme, nothing else', () => {
  assert.ok(bearerMatches('Bearer s3cret-token', 's3cret-token'));
  assert.ok(bearerMatches('bearer s3cret-token', 's3cret-token'));
  for (const header of [
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Bearer s3cret-tokeN',
    'Bearer s3cret-token extra',
    'Basic s3cret-token',
    's3cret-token',
  ]) {
    assert.not.ok(bearerMatches(header, 's3cret-token'), String(header));
  }
});

test('requireBearer fails closed with 503 when the secret is unset, 401 when the token is wrong', () => {
  const req = (authorization?: string) => ({ headers: { authorization } }) as IncomingMessage;
  const closed = refusal(() => requireBearer(req('Bearer anything'), null, 'walk_disabled', 'PIPELINE_TRIGGER_SECRET'));
  assert.equal([closed.status, closed.error], [503, 'walk_disabled']);
  const wrong = refusal(() => requireBearer(req('Bearer nope'), 'right', 'walk_disabled', 'PIPELINE_TRIGGER_SECRET'));
  assert.equal([wrong.status, wrong.error], [401, 'unauthorized']);
  assert.not.match(wrong.message, /right/);
  requireBearer(req('Bearer right'), 'right', 'walk_disabled', 'PIPELINE_TRIGGER_SECRET');
});

test('destPath: plain paths pass, # and punctuation verbatim, the directive stripped', () => {
  assert.equal(parseStagePath('docs/a.md'), { path: 'docs/a.md', failStage5: null });
  assert.equal(parseStagePath('docs/r&d #2 (final), v1.md'), { path: 'docs/r&d #2 (final), v1.md', failStage5: null });
  assert.equal(parseStagePath('docs/a.md?failStage5=embedder'), { path: 'docs/a.md', failStage5: 'embedder' });
  assert.equal(parseStagePath('a.md?failStage5=pair_resolver'), { path: 'a.md', failStage5: 'pair_resolver' });
});

test('destPath: each directive error is a named 400 listing the valid modes', () => {
  const cases: [string, string][] = [
    ['a.md?other=1', 'unknown_suffix'],
    ['a.md?', 'unknown_suffix'],
    ['?failStage5=embedder', 'directive_without_path'],
    ['a.md?failStage5', 'directive_missing_value'],
    ['a.md?failStage5=everything', 'unknown_mode'],
  ];
  for (const [destPath, error] of cases) {
    const e = refusal(() => parseStagePath(destPath));
    assert.equal([e.status, e.error], [400, error], destPath);
    assert.equal(e.extra.valid_modes, ['embedder', 'pair_resolver']);
  }
});

test('destPath: escapes from the corpus are refused', () => {
  for (const destPath of [
    '../etc/passwd',
    'a/../../b.md',
    '/abs/path.md',
    'C:/x.md',
    'a\\b.md',
    'a\u0000b.md',
    '%2e%2e/x.md',
    'a%2Fb.md',
    '..',
    'a//b.md',
    './a.md',
    '.hidden/a.md',
    '',
  ]) {
    const e = refusal(() => parseStagePath(destPath));
    assert.is(e.status, 400, destPath);
  }
  assert.is(refusal(() => parseStagePath(undefined)).error, 'dest_path_missing');
});

test('registry: one terminal state per walk, opId once completed, oldest evicted past 50', () => {
  const registry = new WalkRegistry();
  const first = registry.accept();
  registry.start(first.requestId);
  assert.is(registry.get(first.requestId)?.state, 'running');
  registry.finish(first.requestId, 'completed', { opId: 'op-1' });
  assert.equal([registry.get(first.requestId)?.state, registry.get(first.requestId)?.opId], ['completed', 'op-1']);
  assert.throws(() => registry.finish(first.requestId, 'failed'), /cannot move from completed/);
  const busy = registry.accept();
  registry.finish(busy.requestId, 'fence_busy');
  assert.is(registry.get(busy.requestId)?.state, 'fence_busy');
  for (let i = 0; i < 49; i++) registry.accept();
  assert.is(registry.get(first.requestId), undefined, 'the 51st walk evicts the first');
  assert.is(registry.get(busy.requestId)?.state, 'fence_busy');
});

test('only loopback peers may stage', () => {
  for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopback(address), address);
  for (const address of ['10.0.0.1', '192.168.1.2', '::ffff:10.1.2.3', 'fe80::1', undefined])
    assert.not.ok(isLoopback(address), String(address));
});

test('a JSON body: each way of not fitting its schema is a named 400, unknown fields before bad values', () => {
  const body = jsonBody(
    Type.Object(
      {
        into: Type.String({ format: 'uuid', title: 'a mention id' }),
        mentions: Type.Array(Type.String({ format: 'uuid' }), {
          minItems: 1,
          title: 'a non-empty list of mention ids',
        }),
        note: Type.Optional(Type.String({ title: 'a string' })),
      },
      { additionalProperties: false },
    ),
    { maxBytes: 100, required: true, errorNames: { note: 'note_invalid' } },
  );
  const id = '00000000-0000-4000-8000-000000000000';
  const refused = (text: string) => {
    const e = refusal(() => checkJsonBody(body, text));
    return [e.status, e.error, e.message];
  };
  assert.equal(refused('{"into"'), [400, 'invalid_json', 'the body is not valid JSON']);
  assert.equal(refused('[]'), [400, 'invalid_body', 'the body must be a JSON object']);
  assert.equal(refused('null'), [400, 'invalid_body', 'the body must be a JSON object']);
  assert.equal(refused(`{"into": 5, "also": 1}`), [
    400,
    'unknown_field',
    'unknown field also; the fields are into, mentions, note',
  ]);
  assert.equal(refused('{}'), [400, 'invalid_field', 'into must be a mention id']);
  assert.equal(refused(`{"into": "nope", "mentions": ["${id}"]}`), [400, 'invalid_field', 'into must be a mention id']);
  assert.equal(refused(`{"into": "${id}", "mentions": []}`), [
    400,
    'invalid_field',
    'mentions must be a non-empty list of mention ids',
  ]);
  assert.equal(refused(`{"into": "${id}", "mentions": ["${id}"], "note": 1}`), [
    400,
    'note_invalid',
    'note must be a string',
  ]);
  assert.equal(checkJsonBody(body, `{"into": "${id}", "mentions": ["${id}"]}`), { into: id, mentions: [id] });
  // A field without a title could not say what it must be: refused where the route is defined.
  assert.throws(() => jsonBody(Type.Object({ x: Type.Boolean() }), { maxBytes: 1, required: false }), /no title/);
});

test("the failure directive's clients carry the sentinel for both credentials of their kind; others keep theirs", () => {
  const saved = { OPENAI_API_KEY: process.env.OPENAI_API_KEY, ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY };
  try {
    process.env.OPENAI_API_KEY = 'real-openai';
    process.env.ANTHROPIC_API_KEY = 'real-anthropic';
    const resolver = createLlmClient(null, breaks('pair_resolver', 'llm'));
    assert.equal([resolver.apiKey, resolver.authToken], [FAILURE_SENTINEL, FAILURE_SENTINEL]);
    assert.is(createEmbeddingClient(null, breaks('pair_resolver', 'embedder')).apiKey, 'real-openai');
    assert.is(createEmbeddingClient(null, breaks('embedder', 'embedder')).apiKey, FAILURE_SENTINEL);
    assert.is(createLlmClient(null, breaks('embedder', 'llm')).apiKey, 'real-anthropic');
    assert.is(createLlmClient(null, breaks(null, 'llm')).apiKey, 'real-anthropic');
    assert.equal([process.env.OPENAI_API_KEY, process.env.ANTHROPIC_API_KEY], ['real-openai', 'real-anthropic']);
    const directive = new FailureDirective();
    directive.arm('embedder');
    assert.is(directive.consume(), 'embedder');
    assert.is(directive.consume(), null, 'one-shot');
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test.run();
