// @engine
// The producer at the model's pace: the drafts of the next batch of concepts are asked while the
// last drafts of the batch before are still in flight, so the model's queue does not run short at
// a batch boundary. The mock model server's producer answers come back through a loopback relay
// that holds each for 150 ms.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { walk } from '../engine/walk/walk.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import { startMockServer } from '../mock/server.ts';
import { BATCH_CONCEPTS } from '../stages/producer/index.ts';
import { modelRelay } from './helpers/model-relay.ts';
import { walkFixture } from './helpers/walk.ts';

const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;
const CONCURRENCY = 4;

const STEMS = ['Alder', 'Aspen', 'Birch', 'Beech', 'Cedar', 'Cherry', 'Elder', 'Hazel', 'Holly', 'Juniper', 'Larch'];
const KINDS = ['Traders', 'Logistics', 'Bank', 'University', 'Holdings', 'Group'];

test('the next batch of concepts is drafted while the batch before still has drafts in flight', async () => {
  const saved = VARS.map((name) => [name, process.env[name]] as const);
  const mock = await startMockServer();
  const relay = await modelRelay(mock.url, PROMPTS.producer.tool, () => 150);
  Object.assign(process.env, {
    ANTHROPIC_BASE_URL: relay.origin,
    ANTHROPIC_API_KEY: 'k',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'k',
  });
  const f = await walkFixture({
    env: { INGEST_PRODUCER_AFTER_WALK: 'true', INGEST_MODEL_CONCURRENCY: String(CONCURRENCY) },
  });
  try {
    // Every firm named by two documents: a concept each, more than one batch of them.
    const firms = STEMS.flatMap((stem) => KINDS.map((kind) => `${stem} ${kind}`));
    for (const visit of ['first', 'second'])
      await f.write(`${visit}.md`, `# f\n\n${firms.map((n) => `We met ${n} on the ${visit} visit.`).join('\n\n')}\n`);
    await walk(f.lifespan, { sourcePath: f.corpus });
    await f.lifespan.producer.idle();
    const drafts = relay.answeredWhenSent.length;
    assert.ok(drafts > BATCH_CONCEPTS, `${drafts} drafts: more than one batch`);
    assert.is(relay.peak, CONCURRENCY);
    // Were the batches drafted one after another, the first draft of the second batch would go
    // out only once every draft of the first had come back.
    const atBoundary = relay.answeredWhenSent[BATCH_CONCEPTS]!;
    assert.ok(atBoundary < BATCH_CONCEPTS, `the second batch began with ${atBoundary} of the first's answers back`);
  } finally {
    await f.dispose();
    await relay.close();
    await mock.close();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test.run();
