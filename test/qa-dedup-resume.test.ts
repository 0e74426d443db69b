// @engine
// Stage 5 (ii) resumes to the same outcome (docs/DECISIONS.md "Stage 5 resumes to the same
// outcome"): a Q&A dedup pass stopped after any batch of pending pairs, or before it lists its
// ops, its process alive after a database fault or killed, is finished by the next walk
// (unchanged documents, no retry in between) to exactly the q_a_dedup_proposals and q_a_dedup_ops
// of an uninterrupted walk. Real `ingest walk` processes over the Q&A benchmark's corpus
// (repeated FAQ entries across documents, each document cut to its title and Q&A), with more than
// two batches of pending pairs.
//
//   alive   a trigger makes the database fail the pass's first write past the boundary: on
//           PostgreSQL it ends its own connection (pg_terminate_backend, a real cut), on the
//           embedded database it raises. The walk contains the failed pass and exits 0.
//   killed  a trigger holds that write, and the walk is killed (SIGKILL) while it waits: on
//           PostgreSQL once another session sees the trigger reached; on the embedded
//           database, whose one session the held write occupies, once the pass logs the batch
//           before it recorded.
//
// The proposals' op_id is left out of the comparison: it says which walk's pass wrote the row,
// and a resumed pass's later batches are the next walk's (docs/DECISIONS.md).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Database } from '../lib/db/database.ts';
import { pendingOps } from '../lib/db/op-ledger.ts';
import { BATCH_PAIRS } from '../stages/qa-dedup/index.ts';
import { QA_DEDUP_LEDGER } from '../stages/qa-dedup/pending.ts';
import { buildDocument, relPathOf } from '../bench/corpus/generate.ts';
import { renderDocument } from '../bench/corpus/render.ts';
import {
  contentRows,
  Deployments,
  faultReached,
  installFault,
  OP,
  passOf,
  POSTGRES,
  removeFault,
  type Fault,
} from './helpers/pass-faults.ts';

const DOCS = 160;
const SEED = 1;

let root: string;
let deployments: Deployments;

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-qa-resume-'));
  const corpus = path.join(root, 'corpus');
  for (let index = 0; index < DOCS; index++) {
    // Its title and Q&A only: the pairs are the same, the walk's other work a fraction.
    const doc = { ...buildDocument(SEED, index, 'md', { repeatedQa: true }), sections: [] };
    const file = path.join(corpus, relPathOf(index, 'md'));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, await renderDocument(doc));
  }
  deployments = new Deployments(root, corpus);
});
test.after(async () => {
  await deployments.dispose();
  rmSync(root, { recursive: true, force: true });
});

const QA = (id: string) =>
  `(SELECT d.rel_path || '#' || q.idx FROM q_a_extractions q JOIN source_documents d ON d.id = q.source_document_id WHERE q.id = ${id})`;

/** What stage 5 (ii) leaves, in content terms. */
async function proposed(db: Database): Promise<Record<string, string[]>> {
  return {
    q_a_dedup_proposals: await contentRows(
      db,
      // Each pair's two sides in content order: which is a and which b follows ids minted per deployment.
      `SELECT least(a, b) || ' ~ ' || greatest(a, b) || ' ' || similarity || ' ' || status
         FROM (SELECT ${QA('p.q_a_extraction_a')} AS a, ${QA('p.q_a_extraction_b')} AS b, p.similarity, p.status
                 FROM q_a_dedup_proposals p) AS named`,
    ),
    q_a_dedup_ops: await contentRows(db, `SELECT ${OP('o.op_id')} FROM q_a_dedup_ops o`),
  };
}

let expected: Record<string, string[]>;
let batches = 0;

test('an uninterrupted walk: the reference, with more than two batches of pending pairs', async () => {
  const env = await deployments.create('reference');
  const walked = await deployments.walk(env);
  assert.is(walked.code, 0, walked.errors);
  const pass = passOf(walked.summary, 'qa_dedup');
  assert.ok(pass.ok, pass.error);
  batches = Math.ceil(pass.counts!.pairs! / BATCH_PAIRS);
  assert.ok(batches >= 3, `${pass.counts!.pairs} pairs: ${batches} batches`);
  expected = await deployments.withDatabase(env, proposed);
  assert.ok(expected.q_a_dedup_proposals!.length > 50, `${expected.q_a_dedup_proposals!.length} proposals`);
});

/** After each batch but the last (the next batch's write faults), and before the ledger; the batch last recorded. */
function stops(): { name: string; fault: Fault; recorded: number }[] {
  return [
    ...Array.from({ length: batches - 1 }, (_, k) => ({
      name: `after batch ${k}`,
      // One upsert statement per batch, whatever it proposes.
      fault: { table: 'q_a_dedup_proposals', event: 'INSERT' as const, at: k + 2 },
      recorded: k,
    })),
    {
      name: 'every batch written, the ops not yet listed',
      fault: { table: 'q_a_dedup_ops', event: 'INSERT', at: 1 },
      recorded: batches - 1,
    },
  ];
}

async function finishAndCompare(env: Record<string, string>, stop: string): Promise<void> {
  const waiting = await deployments.withDatabase(env, (db) => pendingOps(db, QA_DEDUP_LEDGER));
  assert.is(waiting.length, 1, `${stop}: the walk's op still waits for the proposer`);
  const next = await deployments.walk(env);
  assert.is(next.code, 0, `${stop}: the next walk completes\n${next.errors}`);
  const pass = passOf(next.summary, 'qa_dedup');
  assert.ok(pass.ok, `${stop}: ${pass.error}`);
  const got = await deployments.withDatabase(env, proposed);
  for (const [table, rows] of Object.entries(expected)) assert.equal(got[table], rows, `${stop}: ${table}`);
}

test('a Q&A dedup pass whose database faults after any batch, its process alive, is finished by the next walk to the same outcome', async () => {
  for (const [i, stop] of stops().entries()) {
    const env = await deployments.create(`alive-${i}`);
    await deployments.withDatabase(env, (db) => installFault(db, stop.fault, 'fail'));
    const faulted = await deployments.walk(env);
    assert.is(faulted.code, 0, `${stop.name}: a failed pass is contained\n${faulted.errors}`);
    assert.not.ok(passOf(faulted.summary, 'qa_dedup').ok, `${stop.name}: the pass failed`);
    await deployments.withDatabase(env, (db) => removeFault(db, stop.fault));
    await finishAndCompare(env, stop.name);
  }
});

test('a walk killed in its Q&A dedup pass after any batch is finished by the next walk to the same outcome', async () => {
  for (const [i, stop] of stops().entries()) {
    const env = await deployments.create(`killed-${i}`);
    await deployments.withDatabase(env, (db) => installFault(db, stop.fault, 'hold'));
    const killed = POSTGRES
      ? await deployments.withDatabase(env, (db) => deployments.walk(env, { poll: () => faultReached(db, stop.fault) }))
      : await deployments.walk(env, {
          onLine: (line) => line.msg === 'Q&A dedup batch recorded' && line.batch === stop.recorded,
        });
    assert.ok(killed.killed, `${stop.name}: the walk was killed`);
    await deployments.withDatabase(env, (db) => removeFault(db, stop.fault));
    await finishAndCompare(env, stop.name);
  }
});

test.run();
