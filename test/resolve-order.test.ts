// @engine
// Stage 5 (i): the pass's outcome does not depend on the order its answers arrive. The same
// corpus is resolved three times on fresh databases: with one question in flight, the answers in
// the order asked; and twice with eight in flight through a loopback relay to the mock model
// server that holds each pair-resolver answer back for a seeded random time, so that answers
// overtake one another. The names span two batches, so the batch boundary is crossed in flight.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { walk } from '../engine/walk/walk.ts';
import { PROMPTS } from '../lib/llm/prompts.ts';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { BATCH_NAMES } from '../stages/resolve/decide.ts';
import { modelRelay, seeded } from './helpers/model-relay.ts';
import { walkFixture } from './helpers/walk.ts';
import { STEMS } from './helpers/name-stems.ts';

const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;

const KINDS = ['Traders', 'Logistics', 'Bank', 'University', 'Holdings', 'Group'];

/** A one-letter typo: the stem's second and third letters swapped. */
const typo = (stem: string) => `${stem[0]}${stem[2]}${stem[1]}${stem.slice(3)}`;

/** Every firm in two documents; a typo of the first three kinds of each stem in one. */
function corpus(): Record<string, string> {
  const firms = STEMS.flatMap((stem) => KINDS.map((kind) => `${stem} ${kind}`));
  const typos = STEMS.flatMap((stem) => KINDS.slice(0, 3).map((kind) => `${typo(stem)} ${kind}`));
  const text = (names: string[], visit: string) =>
    `# f\n\n${names.map((name) => `We met ${name} on the ${visit} visit.`).join('\n\n')}\n`;
  return { 'first.md': text(firms, 'first'), 'second.md': text(firms, 'second'), 'typos.md': text(typos, 'third') };
}

/** Resolves the corpus on a fresh database with `concurrency` model calls in flight; returns every name's root. */
async function resolveCorpus(model: string, concurrency: number) {
  const saved = VARS.map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, { ANTHROPIC_BASE_URL: model, ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k' });
  const f = await walkFixture({ env: { INGEST_MODEL_CONCURRENCY: String(concurrency) } });
  try {
    for (const [name, text] of Object.entries(corpus())) await f.write(name, text);
    const summary = await walk(f.lifespan, { sourcePath: f.corpus });
    assert.equal(
      summary.passes.map((p) => [p.name, p.ok]),
      [
        ['entity_resolution', true],
        ['qa_dedup', true],
        ['url_backlink', true],
        ['cleanup', true],
      ],
    );
    const counts = summary.passes[0]!.counts!;
    const roots = (
      await f.target.db.query<{ entity_type: string; name: string; canonical_name: string; canonical_type: string }>(
        `SELECT entity_type, name, canonical_name, canonical_type FROM entity_names ORDER BY entity_type, name COLLATE "C"`,
      )
    ).rows;
    return { counts, roots };
  } finally {
    await f.dispose();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

let mock: MockServer;
// The test files share one process: the embeddings' endpoint goes back to what it was.
const embeddingsBefore = process.env.OPENAI_BASE_URL;
test.before(async () => {
  mock = await startMockServer();
  process.env.OPENAI_BASE_URL = `${mock.url}/v1`;
});
test.after(async () => {
  await mock.close();
  if (embeddingsBefore === undefined) delete process.env.OPENAI_BASE_URL;
  else process.env.OPENAI_BASE_URL = embeddingsBefore;
});

test('the same roots whatever the order answers arrive: one in flight, and eight shuffled across a batch boundary', async () => {
  const inOrder = await resolveCorpus(mock.url, 1);
  assert.ok(inOrder.counts.names! > BATCH_NAMES, `${inOrder.counts.names} names: more than one batch`);
  assert.ok(inOrder.counts.resolver_asked! > 50, `${inOrder.counts.resolver_asked} questions`);
  assert.ok(inOrder.counts.joined_by_resolver! >= 100, 'the typos join their firms');
  for (const seed of [1, 2]) {
    const random = seeded(seed);
    const relay = await modelRelay(mock.url, PROMPTS.pair_resolver.tool, () => Math.floor(random() * 40));
    try {
      const shuffled = await resolveCorpus(relay.origin, 8);
      assert.ok(relay.peak >= 6, `${relay.peak} questions in flight at most`);
      const overtaken = relay.answered.filter((question, i) => relay.answered.slice(i + 1).some((q) => q < question));
      assert.ok(overtaken.length > 10, `answers overtook others: ${overtaken.length}`);
      assert.equal(shuffled.counts, inOrder.counts, `seed ${seed}: the same counts`);
      assert.equal(shuffled.roots, inOrder.roots, `seed ${seed}: the same roots`);
    } finally {
      await relay.close();
    }
  }
});

test.run();
