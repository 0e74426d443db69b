// @engine
// The retrieval template_fill and `ingest search` share (worker/retrieval.ts), on the engine the
// run targets, over Q&A pairs walked into rows on the mock tier: a question asked in other words
// finds its pair over pairs of the neighbouring subject asked in the question's own words.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import { walk } from '../engine/walk/walk.ts';
import { loadConfig } from '../lib/config.ts';
import { embedder } from '../worker/jobs.ts';
import { retrieve } from '../worker/retrieval.ts';
import { openWorkerRuntime, type WorkerRuntime } from '../worker/runtime.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

const TRUE_PAIR = 'How do I request a parking permit at the north office?';

// One pair about the north office in one wording, the same subject at three other offices in
// the wording the question will use, and enough other pairs that none of these words is common
// ("request" is, a little, as phrasing words are in a real FAQ).
const FAQ = [
  `Q: ${TRUE_PAIR}\nA: Fill in the blue form at the north reception desk.`,
  ...['south', 'east', 'west'].map(
    (site) =>
      `Q: What is the way to ask for a parking permit at the ${site} office?\nA: Write to the ${site} facilities team.`,
  ),
  ...Array.from({ length: 10 }, (_, i) => `Q: How do I request badge model ${i}?\nA: Badge ${i} comes from security.`),
  ...Array.from({ length: 30 }, (_, i) => `Q: Who approves purchase order ${i}?\nA: Order ${i} goes to finance.`),
].join('\n\n');

let tier: MockTier;
let f: WalkFixture;
let runtime: WorkerRuntime;

test.before(async () => {
  tier = await startMockTier();
  f = await walkFixture();
  await f.write('faq.md', `# Facilities FAQ\n\n${FAQ}\n`);
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  runtime = await openWorkerRuntime(loadConfig({ INGEST_DATA_DIR: f.root }, f.root), pino({ level: 'silent' }));
});

test.after(async () => {
  await runtime.close();
  await f.dispose();
  await tier.stop();
});

test('a question in other words finds its pair first, over the same wording about other offices', async () => {
  const evidence = await retrieve(
    f.target.db,
    embedder(runtime.deps),
    'What is the way to ask for a parking permit at the north office?',
    5,
  );
  const pairs = evidence.filter((e) => e.kind === 'q_a_pair');
  assert.ok(pairs.length > 0, JSON.stringify(evidence));
  assert.ok(pairs[0]!.text.includes(TRUE_PAIR), pairs.map((p) => `${p.score} ${p.text}`).join('\n'));
  assert.ok(pairs[0]!.lexical);
  assert.match(pairs[0]!.citation, /^record:\/\/source_document\/[0-9a-f-]{36}$/);
});

test('a question the corpus cannot answer gets no Q&A evidence', async () => {
  const evidence = await retrieve(f.target.db, embedder(runtime.deps), 'Quarterly zeppelin refuelling schedule?', 5);
  assert.equal(
    evidence.filter((e) => e.kind === 'q_a_pair'),
    [],
  );
});

test.run();
