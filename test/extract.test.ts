// The extractors against a mock whose answers the test controls: the corrective re-ask, the
// taxonomy check, and Q&A enumeration across extraction windows.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import PQueue from 'p-queue';
import { inRunContext, publishRunContext } from '../lib/run-context.ts';
import { openStateStore, type StateStore } from '../lib/state/store.ts';
import { ExtractionError, runExtractor } from '../lib/llm/run-extractor.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import { EXTRACTOR_RESPONDERS } from '../mock/extractors.ts';
import type { MessagesRequest, PromptResponder } from '../mock/messages.ts';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { extractDocument, extractionWindows } from '../stages/extract/index.ts';

let dir: string;
let store: StateStore;
let mock: MockServer;
const seen: MessagesRequest[] = [];

async function setUp(overrides: Partial<Record<keyof typeof PROMPTS, PromptResponder>>) {
  dir = mkdtempSync(path.join(tmpdir(), 'ingest-extract-'));
  store = await openStateStore(dir);
  const prompts = new Map(EXTRACTOR_RESPONDERS);
  for (const [name, responder] of Object.entries(overrides)) {
    prompts.set(PROMPTS[name as keyof typeof PROMPTS].system, (request) => {
      seen.push(request);
      return responder!(request);
    });
  }
  mock = await startMockServer({ prompts });
  seen.length = 0;
  return publishRunContext('00000000-0000-4000-8000-000000000001', false);
}
test.after.each(async () => {
  await store.close();
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
});

const context = () => ({
  client: new Anthropic({ baseURL: mock.url, apiKey: 'k', maxRetries: 0 }),
  model: 'm',
  identity: `${mock.url}:m`,
  store,
  queue: new PQueue({ concurrency: 1 }),
});

test('an invalid output gets one corrective re-ask that shows the model its error', async () => {
  let calls = 0;
  await setUp({
    classification: () =>
      ++calls === 1 ? { label: 'policy', confidence: 7, topics: [] } : { label: 'policy', confidence: 0.9, topics: [] },
  });
  const result = await runExtractor(PROMPTS.classification, 'A travel policy.', context());
  assert.equal(result, { label: 'policy', confidence: 0.9, topics: [] });
  assert.is(seen.length, 2);
  const reask = JSON.stringify(seen[1]!.messages.at(-1));
  assert.match(reask, /tool_result/);
  assert.match(reask, /confidence must be <= 1/);
});

test('an output still invalid after the re-ask fails as invalid_output and is not memoised', async () => {
  await setUp({ classification: () => ({ label: '', confidence: 0.5, topics: [] }) });
  const error = await runExtractor(PROMPTS.classification, 'Text.', context()).catch((e: unknown) => e);
  assert.instance(error, ExtractionError);
  assert.is((error as ExtractionError).code, 'invalid_output');
  assert.is(seen.length, 2);
  assert.is(await store.memoCount(), 0);
});

test('a label outside the taxonomy is kept, flagged and counted as taxonomy_miss', async () => {
  const run = await setUp({ classification: () => ({ label: 'recipe', confidence: 0.6, topics: ['soup'] }) });
  // An event counts into the run context it happens in (lib/run-context.ts): the walk's.
  const result = await inRunContext(run, () =>
    extractDocument('How to make soup.', { ...context(), queue: new PQueue({ concurrency: 4 }) }),
  );
  assert.equal(result.classification, { label: 'recipe', confidence: 0.6, topics: ['soup'], in_taxonomy: false });
  assert.is(run.counters.taxonomy_miss, 1);
});

test('Q&A pairs are enumerated across extraction windows in document order', async () => {
  await setUp({});
  const block = (n: number) =>
    `Q: Question number ${n}?\nA: Answer ${n}.\n\n${'Filler text about the policy. '.repeat(60)}`;
  const text = Array.from({ length: 12 }, (_, i) => block(i)).join('\n\n');
  assert.ok(extractionWindows(text).length >= 2, 'the text spans several windows');
  const result = await extractDocument(text, { ...context(), queue: new PQueue({ concurrency: 4 }) });
  assert.equal(
    result.qa.map((p) => [p.idx, p.question]),
    Array.from({ length: 12 }, (_, i) => [i, `Question number ${i}?`]),
  );
});

test.run();
