// @engine
// Stage 5 (ii), the Q&A dedup proposer, over real walks on tier 1 (the mock model server over
// HTTP, its trigram embeddings): repeats across documents proposed once per pair, a repeat
// inside one document not, unanswered pairs never; the Q&A rows untouched; decisions standing
// through full_reprocess; an unchanged walk writing nothing; failStage5 stopping the pass.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { walk } from '../engine/walk/walk.ts';
import type { Database } from '../lib/db/database.ts';
import { dedupKey, qaKey } from '../lib/ids.ts';
import { FAIL_STAGE5_MODES } from '../lib/failure-directive.ts';
import { proposeQaDuplicates } from '../stages/qa-dedup/index.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

let tier: MockTier;
let f: WalkFixture;

test.before.each(async () => {
  tier = await startMockTier();
  f = await walkFixture();
});
test.after.each(async () => {
  await f.dispose();
  await tier.stop();
});

async function rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await f.target.db.query<T>(sql, params)).rows;
}

const pair = (q: string, a: string) => `Q: ${q}\nA: ${a}\n`;
const TRAIN = [
  'How do I book a train ticket?',
  'Book it in the travel portal and attach the approval email from your manager.',
];
const TRAIN_REWORDED = ['Where can train tickets be booked?', TRAIN[1]!];
const EXPENSE = ['Who signs the expense form?', 'Your line manager signs it within five working days.'];
const EXPENSE_CHANGED = [EXPENSE[0]!, 'Finance approves every claim over two hundred euros.'];
const PARKING = ['Is parking free for visitors?', 'Visitors park free in the north lot for up to three hours.'];

const DOCUMENTS: Record<string, string> = {
  // idx 0 TRAIN, 1 EXPENSE
  'a.md': `# Travel\n\n${pair(TRAIN[0]!, TRAIN[1]!)}\n${pair(EXPENSE[0]!, EXPENSE[1]!)}`,
  // idx 0 an exact repeat (case and punctuation aside), 1 blank (the blank-form gate), 2 unrelated
  'b.md': `# Trips\n\n${pair('how do I book a TRAIN ticket', TRAIN[1]!.toUpperCase())}\n${pair('What is your badge number?', '')}\n${pair(PARKING[0]!, PARKING[1]!)}`,
  // idx 0 the question reworded, the answer the same; idx 1 the question the same, the answer changed
  'c.md': `# Booking\n\n${pair(TRAIN_REWORDED[0]!, TRAIN_REWORDED[1]!)}\n${pair(EXPENSE_CHANGED[0]!, EXPENSE_CHANGED[1]!)}`,
  // one pair twice inside one document, nowhere else
  'd.md': `# Lunch\n\n${pair('Is lunch provided on site?', 'A warm lunch is served in the canteen at noon.')}\n${pair('Is lunch provided on site?', 'A warm lunch is served in the canteen at noon.')}`,
};

async function writeAll(): Promise<void> {
  for (const [name, text] of Object.entries(DOCUMENTS)) await f.write(name, text);
}

async function docIds(): Promise<Record<string, string>> {
  const found = await rows<{ rel_path: string; id: string }>(`SELECT rel_path, id::text FROM source_documents`);
  return Object.fromEntries(found.map((r) => [r.rel_path, r.id]));
}

interface ProposalRow {
  id: string;
  a: string;
  b: string;
  similarity: number;
  status: string;
  op_id: string;
  updated_at: string;
}

async function proposals(): Promise<ProposalRow[]> {
  return rows<ProposalRow>(
    `SELECT id::text, q_a_extraction_a::text AS a, q_a_extraction_b::text AS b, similarity, status, op_id::text,
            updated_at::text FROM q_a_dedup_proposals ORDER BY id`,
  );
}

/** The proposals as unordered pairs of "document:idx", sorted, for readable expectations. */
async function proposedPairs(): Promise<string[]> {
  const ids = await docIds();
  const names = new Map<string, string>();
  for (const [rel, doc] of Object.entries(ids)) for (let i = 0; i < 4; i++) names.set(qaKey(doc, i), `${rel}:${i}`);
  return (await proposals()).map((p) => [names.get(p.a)!, names.get(p.b)!].sort().join(' ~ ')).sort();
}

const FIRST_WALK_PAIRS = ['a.md:0 ~ b.md:0', 'a.md:0 ~ c.md:0', 'b.md:0 ~ c.md:0'];

test('repeats across documents are proposed once per pair: exact, reworded; not a changed answer, not inside one document', async () => {
  await writeAll();
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
  const pass = summary.passes.find((p) => p.name === 'qa_dedup')!;
  assert.ok(pass.ok, pass.error);
  assert.equal(
    summary.passes.map((p) => p.name),
    ['entity_resolution', 'qa_dedup', 'url_backlink', 'cleanup'],
    'after entity resolution',
  );
  assert.equal(await proposedPairs(), FIRST_WALK_PAIRS);
  const all = await proposals();
  for (const p of all) {
    assert.ok(p.a < p.b);
    assert.is(p.id, dedupKey(p.b, p.a), 'uuid5 of dedup:{a}:{b}, a < b');
    assert.is(p.status, 'proposed');
    assert.is(p.op_id, summary.opId);
  }
  const ids = await docIds();
  const exact = all.find(
    (p) => [p.a, p.b].sort().join() === [qaKey(ids['a.md']!, 0), qaKey(ids['b.md']!, 0)].sort().join(),
  );
  assert.is(exact!.similarity, 1, 'an exact repeat, case and punctuation aside');
  const reworded = all.find((p) => [p.a, p.b].includes(qaKey(ids['c.md']!, 0)))!;
  assert.ok(reworded.similarity > 0.62 && reworded.similarity < 1, String(reworded.similarity));
  assert.is(pass.counts!.proposed, 3);
});

test('an unanswered pair is never proposed, even with the embedding of an answered one', async () => {
  await writeAll();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const ids = await docIds();
  // A row from before the blank-form gate (the walk writes none), in a walk the proposer has not
  // seen, carrying the very vector of an answered pair and its question.
  const blank = randomUUID();
  const op = randomUUID();
  await f.target.db.query(
    `INSERT INTO q_a_extractions (id, source_document_id, idx, question_text, answer_text, op_id)
     VALUES ($1, $2, 9, $3, ' \t ', $4)`,
    [blank, ids['d.md'], TRAIN[0], op],
  );
  await f.target.db.query(
    `INSERT INTO record_embeddings (owner_kind, owner_id, model, embedding, op_id)
     SELECT owner_kind, $1, model, embedding, $2 FROM record_embeddings WHERE owner_kind = 'q_a_extraction' AND owner_id = $3`,
    [blank, op, qaKey(ids['a.md']!, 0)],
  );
  const report = await proposeQaDuplicates(f.target.db, randomUUID(), null);
  assert.is(report.pairs, 0, 'the blank row is not a pair to examine');
  // And as the other side of a changed pair: a.md edited, its train pair re-examined.
  await f.write('a.md', `${DOCUMENTS['a.md']}\nEdited.\n`);
  const next = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.ok(next.passes.find((p) => p.name === 'qa_dedup')!.counts!.pairs! >= 2);
  const touching = await rows(`SELECT 1 FROM q_a_dedup_proposals WHERE $1 IN (q_a_extraction_a, q_a_extraction_b)`, [
    blank,
  ]);
  assert.is(touching.length, 0);
  assert.equal(await proposedPairs(), FIRST_WALK_PAIRS);
});

test('the pass leaves q_a_extractions byte for byte as it found them', async () => {
  await writeAll();
  await f.reopen([]);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(
    summary.passes.map((p) => p.name),
    ['url_backlink', 'cleanup'],
    'walked without stage 5',
  );
  const snapshot = () => rows<{ row: string }>(`SELECT q::text AS row FROM q_a_extractions q ORDER BY id`);
  const before = await snapshot();
  assert.is(before.length, 8);
  const report = await proposeQaDuplicates(f.target.db, summary.opId!, null);
  assert.equal([report.pairs, report.proposed], [8, 3]);
  assert.equal(await snapshot(), before);
});

test('a pass cut short leaves its walk pending; the next walk does it again and lands the same rows', async () => {
  await writeAll();
  await f.reopen([]);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  // The database fails the statement that would close the walk's ledger entry, after the batch's
  // proposals committed: the process dying at that point leaves the same state.
  const db = f.target.db;
  const faulty: Database = Object.create(db, {
    query: {
      value: (sql: string, params?: unknown[]) =>
        sql.includes('INSERT INTO q_a_dedup_ops')
          ? Promise.reject(new Error('connection lost'))
          : db.query(sql, params),
    },
  });
  const failed = await proposeQaDuplicates(faulty, summary.opId!, null).then(
    () => null,
    (error: Error) => error.message,
  );
  assert.is(failed, 'connection lost');
  const landed = await proposals();
  assert.is(landed.length, 3, 'the batch committed whole');
  assert.equal(await rows(`SELECT * FROM q_a_dedup_ops`), [], 'the walk is still pending');
  await f.reopen();
  const next = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(next.passes.find((p) => p.name === 'qa_dedup')!.counts, { pairs: 8, proposed: 0, withdrawn: 0 });
  assert.equal(await proposals(), landed, 'the same rows, not rewritten');
  assert.is((await rows(`SELECT * FROM q_a_dedup_ops`)).length, 1);
});

test('the pass asks the model nothing: it reads the vectors stage 4 stored, so no question of it waits in flight', async () => {
  // Stage 5 (i) keeps its questions in flight up to the model's concurrency
  // (stages/resolve/decide.ts); this pass has none to keep: its candidates and scores are
  // database reads.
  await writeAll();
  await walk(f.lifespan, { sourcePath: f.corpus });
  await f.target.db.query('DELETE FROM q_a_dedup_ops');
  const { messages, embeddings } = tier.mock.stats;
  const report = await proposeQaDuplicates(f.target.db, randomUUID(), null);
  assert.ok(report.pairs > 0, 'the pass had pairs to look at');
  assert.equal([tier.mock.stats.messages, tier.mock.stats.embeddings], [messages, embeddings]);
});

test('an unchanged walk makes no proposal and writes nothing', async () => {
  await writeAll();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await proposals();
  const ledger = () => rows(`SELECT op_id::text, finished_at::text FROM q_a_dedup_ops ORDER BY 1`);
  const ledgerBefore = await ledger();
  const again = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(again.items.unchanged, 4);
  assert.equal(again.passes.find((p) => p.name === 'qa_dedup')!.counts, { pairs: 0, proposed: 0, withdrawn: 0 });
  assert.equal(await proposals(), before);
  assert.equal(await ledger(), ledgerBefore);
});

test('accepted and rejected proposals survive full_reprocess unchanged and are never proposed again', async () => {
  await writeAll();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const [first, second, third] = await proposals();
  await f.target.db.query(`UPDATE q_a_dedup_proposals SET status = 'accepted' WHERE id = $1`, [first!.id]);
  await f.target.db.query(`UPDATE q_a_dedup_proposals SET status = 'rejected' WHERE id = $1`, [second!.id]);
  const decided = await proposals();
  const reprocessed = await walk(f.lifespan, { sourcePath: f.corpus, fullReprocess: true });
  assert.is(reprocessed.items.changed, 4, 'every document re-extracted');
  assert.ok(reprocessed.passes.find((p) => p.name === 'qa_dedup')!.counts!.pairs! >= 6, 'every pair examined again');
  assert.equal(await proposals(), decided, 'the decided rows and the still-proposed one, untouched');
  assert.equal(
    (await proposals()).map((p) => p.status),
    [first, second, third].map((p) => (p === first ? 'accepted' : p === second ? 'rejected' : 'proposed')),
  );
});

test('a changed pair withdraws its proposals that no longer hold, never a decided one; a deleted one takes its proposals', async () => {
  await writeAll();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const ids = await docIds();
  const aTrain = qaKey(ids['a.md']!, 0);
  const bTrain = qaKey(ids['b.md']!, 0);
  const cTrain = qaKey(ids['c.md']!, 0);
  await f.target.db.query(`UPDATE q_a_dedup_proposals SET status = 'rejected' WHERE id = $1`, [
    dedupKey(aTrain, cTrain),
  ]);
  // c.md's train pair gets another answer: it resembles neither repeat any more.
  await f.write('c.md', DOCUMENTS['c.md']!.replace(TRAIN[1]!, 'Ask reception for a paper voucher on the day.'));
  const edited = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(edited.passes.find((p) => p.name === 'qa_dedup')!.counts!.withdrawn, 1);
  const left = new Map((await proposals()).map((p) => [p.id, p.status]));
  assert.equal(
    [...left.entries()].sort(),
    [
      [dedupKey(aTrain, bTrain), 'proposed'],
      [dedupKey(aTrain, cTrain), 'rejected'],
    ].sort(),
  );
  await rm(path.join(f.corpus, 'b.md'));
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(
    (await proposals()).map((p) => [p.id, p.status]),
    [[dedupKey(aTrain, cTrain), 'rejected']],
    'the proposal of the removed document went with its rows',
  );
});

for (const mode of FAIL_STAGE5_MODES) {
  test(`failStage5=${mode} stops the pass for that walk; the next walk proposes what it left`, async () => {
    await writeAll();
    const injected = await walk(f.lifespan, { sourcePath: f.corpus, failStage5: mode });
    assert.is(injected.status, 'completed');
    assert.equal(injected.stage5FailureInjected, mode);
    const pass = injected.passes.find((p) => p.name === 'qa_dedup')!;
    assert.is(pass.ok, false);
    assert.match(pass.error!, /failStage5/);
    assert.ok(injected.warnings.some((w) => w.name === 'qa_dedup_failed'));
    assert.equal(await proposals(), []);
    const next = await walk(f.lifespan, { sourcePath: f.corpus });
    assert.is(next.items.unchanged, 4);
    assert.ok(next.passes.find((p) => p.name === 'qa_dedup')!.ok);
    assert.equal(await proposedPairs(), FIRST_WALK_PAIRS);
  });
}

test.run();
