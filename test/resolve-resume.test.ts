// @engine
// Stage 5 (i) resumes to the same outcome (docs/DECISIONS.md "Stage 5 resumes to the same
// outcome"): a pass stopped after any batch, its process alive after a database fault or killed,
// is finished by the next walk (unchanged documents, no retry in between) to exactly the
// entity_mentions, entity_names, entity_root_bands and entity_resolution_ops of an uninterrupted
// walk. Real `ingest walk` processes.
//
// The corpus puts names into three batches by how many documents name them (200 names in six
// documents, 200 in four, the rest in two), with chains across the batch boundaries: yes to A~B
// and B~C, no to A~C (the mock's rule), A and B in one batch and C in the next. Uninterrupted, C
// picks B from memory and goes under A; a resumed pass must offer C the same.
//
//   alive   a trigger makes the database fail the pass's first statement past the boundary: on
//           PostgreSQL it ends its own connection (pg_terminate_backend, a real cut), on the
//           embedded database it raises. The walk contains the failed pass and exits 0.
//   killed  the walk is killed (SIGKILL) once it logs the boundary (a debug line per batch
//           recorded, and at the moves' start); nothing stops the pass there, so it is killed
//           wherever it got to a few milliseconds on.
//
// Two guards besides: moves stopped between their transactions (another corpus, with more
// mentions to move than one transaction takes), and a next walk that changes a document as
// well, whose outcome docs/DECISIONS.md states.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Database } from '../lib/db/database.ts';
import { pendingOps } from '../lib/db/op-ledger.ts';
import { BATCH_NAMES } from '../stages/resolve/decide.ts';
import { RESOLUTION_LEDGER } from '../stages/resolve/pending.ts';
import { rowsInContentTerms } from './helpers/content.ts';
import {
  contentRows,
  Deployments,
  installFault,
  OP,
  passOf,
  removeFault,
  type Fault,
  type LogLine,
} from './helpers/pass-faults.ts';
import { STEMS } from './helpers/name-stems.ts';

const KINDS = [
  'Traders',
  'Logistics',
  'Bank',
  'University',
  'Holdings',
  'Group',
  'Shipping',
  'Foods',
  'Motors',
  'Insurance',
  'Airlines',
  'Energy',
];
/** Yes to A~B and B~C, no to A~C (test/resolve.test.ts checks the mock's answers). */
const GRACE = ['Grace Hopper', 'Grace Hoppor', 'Gracie Hoppor'] as const;
const ALAN = ['Alan Turing', 'Alan Turind', 'Alen Turind'] as const;

/** Names by the number of documents that name them: each tier of six and four is one batch. */
function tiers(): [number, string[]][] {
  const firms = STEMS.flatMap((stem) => KINDS.map((kind) => `${stem} ${kind}`));
  const first = [GRACE[0], GRACE[1], ALAN[0], ...firms.splice(0, BATCH_NAMES - 3)];
  const second = [GRACE[2], ALAN[1], ...firms.splice(0, BATCH_NAMES - 2)];
  return [
    [6, first],
    [4, second],
    [2, [ALAN[2], ...firms]],
  ];
}

async function writeCorpus(corpus: string): Promise<void> {
  await mkdir(corpus);
  for (let doc = 0; doc < 6; doc++) {
    const named = tiers().flatMap(([documents, names]) => (doc < documents ? names : []));
    const text = `# Visits ${doc}\n\n${named.map((name) => `We met ${name} on visit ${doc}.`).join('\n\n')}\n`;
    await writeFile(path.join(corpus, `visits-${doc}.md`), text);
  }
}

let root: string;
let deployments: Deployments;

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-resolve-resume-'));
  const corpus = path.join(root, 'corpus');
  await writeCorpus(corpus);
  deployments = new Deployments(root, corpus);
});
test.after(async () => {
  await deployments.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** What stage 5 (i) leaves, in content terms. */
async function resolved(db: Database): Promise<Record<string, string[]>> {
  const walked = await rowsInContentTerms(db);
  return {
    entity_mentions: walked.entity_mentions!,
    entity_relationships: walked.entity_relationships!,
    record_embeddings: walked.record_embeddings!,
    entity_names: await contentRows(
      db,
      `SELECT entity_type || ' ' || name || ' -> ' || canonical_type || ' ' || canonical_name || ' ' || normalised
              || ' ' || coalesce(md5(embedding::text), 'no vector') || ' ' || ${OP('n.op_id')}
         FROM entity_names n`,
    ),
    entity_root_bands: await contentRows(db, `SELECT band || ' ' || entity_type || ' ' || name FROM entity_root_bands`),
    entity_resolution_ops: await contentRows(db, `SELECT ${OP('o.op_id')} FROM entity_resolution_ops o`),
  };
}

/** A stop: where the database faults, and the log line after which the walk is killed. */
interface Stop {
  name: string;
  fault: Fault;
  killOn?: (line: LogLine) => boolean;
}

let expected: Record<string, string[]>;
let batches = 0;

test('an uninterrupted walk: the reference, three batches of new names, chains across their boundaries', async () => {
  const env = await deployments.create('reference');
  const walked = await deployments.walk(env);
  assert.is(walked.code, 0, walked.errors);
  const pass = passOf(walked.summary, 'entity_resolution');
  assert.ok(pass.ok, pass.error);
  const names = pass.counts!.names!;
  batches = Math.ceil(names / BATCH_NAMES);
  assert.is(batches, 3, `${names} names`);
  expected = await deployments.withDatabase(env, resolved);
  // The premise: each C went under its A through its B, decided in the batch before.
  for (const [a, b, c] of [GRACE, ALAN]) {
    for (const name of [a, b, c]) {
      assert.ok(
        expected.entity_names!.some((row) => row.startsWith(`person ${name} -> person ${a} `)),
        `${name} under ${a}`,
      );
    }
  }
});

/** The stops: after each batch but the last (the next batch's record fails), before the moves, before the ledger. */
function stops(): Stop[] {
  const afterBatch = Array.from({ length: batches - 1 }, (_, k): Stop => ({
    name: `after batch ${k}`,
    fault: { table: 'entity_names', event: 'INSERT', at: k + 2 },
    killOn: (line) => line.msg === 'entity resolution batch recorded' && line.batch === k,
  }));
  return [
    ...afterBatch,
    {
      name: 'every batch recorded, no mention moved',
      // The items of a cold walk delete nothing once a name is recorded: only the moves do.
      fault: { table: 'entity_mentions', event: 'DELETE', at: 1, when: 'EXISTS (SELECT 1 FROM entity_names)' },
      killOn: (line) => line.msg === 'entity resolution decisions recorded; mentions moving',
    },
    {
      name: 'every mention moved, the ops not yet listed',
      fault: { table: 'entity_resolution_ops', event: 'INSERT', at: 1 },
    },
  ];
}

/** After the stop: the pass's ops still wait, the next walk finishes them, and stage 5 (i) left what the reference did. */
async function finishAndCompare(env: Record<string, string>, stop: string): Promise<void> {
  const waiting = await deployments.withDatabase(env, (db) => pendingOps(db, RESOLUTION_LEDGER));
  assert.is(waiting.length, 1, `${stop}: the walk's op still waits for resolution`);
  const next = await deployments.walk(env);
  assert.is(next.code, 0, `${stop}: the next walk completes\n${next.errors}`);
  const pass = passOf(next.summary, 'entity_resolution');
  assert.ok(pass.ok, `${stop}: ${pass.error}`);
  const got = await deployments.withDatabase(env, resolved);
  for (const [table, rows] of Object.entries(expected)) assert.equal(got[table], rows, `${stop}: ${table}`);
}

test('a pass whose database faults after any batch, its process alive, is finished by the next walk to the same outcome', async () => {
  for (const [i, stop] of stops().entries()) {
    const env = await deployments.create(`alive-${i}`);
    await deployments.withDatabase(env, (db) => installFault(db, stop.fault, 'fail'));
    const faulted = await deployments.walk(env);
    assert.is(faulted.code, 0, `${stop.name}: a failed pass is contained\n${faulted.errors}`);
    assert.not.ok(passOf(faulted.summary, 'entity_resolution').ok, `${stop.name}: the pass failed`);
    await deployments.withDatabase(env, (db) => removeFault(db, stop.fault));
    await finishAndCompare(env, stop.name);
  }
});

test('a walk killed after any batch is finished by the next walk to the same outcome', async () => {
  for (const [i, stop] of stops().entries()) {
    if (stop.killOn === undefined) continue;
    const env = await deployments.create(`killed-${i}`);
    const killed = await deployments.walk(env, { onLine: stop.killOn });
    assert.ok(killed.killed, `${stop.name}: the walk was killed`);
    await finishAndCompare(env, stop.name);
  }
});

/** A one-letter typo: the stem's second and third letters swapped (one edit by the mock's rule). */
const typo = (stem: string) => `${stem[0]}${stem[2]}${stem[1]}${stem.slice(3)}`;

test('moves stopped after the first of their transactions are finished by the next walk to the same outcome', async () => {
  // 250 firms and a typo of each in 25 documents: 250 names join, 6,250 mentions move, more than
  // one move transaction (write-back.ts MOVE_CHUNK) holds.
  const corpus = path.join(root, 'moves-corpus');
  await mkdir(corpus);
  const firms = STEMS.flatMap((stem) => KINDS.map((kind) => [`${stem} ${kind}`, `${typo(stem)} ${kind}`])).slice(
    0,
    250,
  );
  for (let doc = 0; doc < 25; doc++) {
    const text = firms.flat().map((name) => `We met ${name} on visit ${doc}.`);
    await writeFile(path.join(corpus, `moves-${doc}.md`), `# Moves ${doc}\n\n${text.join('\n\n')}\n`);
  }
  const moving = new Deployments(root, corpus);
  try {
    const reference = await moving.create('moves-reference');
    const walked = await moving.walk(reference);
    const counts = passOf(walked.summary, 'entity_resolution').counts!;
    assert.ok(counts.mentions_moved! > 5_000, `${counts.mentions_moved} mentions moved`);
    const wanted = await moving.withDatabase(reference, resolved);
    const env = await moving.create('moves-stopped');
    const fault: Fault = {
      table: 'entity_mentions',
      event: 'DELETE',
      at: 2,
      when: 'EXISTS (SELECT 1 FROM entity_names)',
    };
    await moving.withDatabase(env, (db) => installFault(db, fault, 'fail'));
    assert.not.ok(passOf((await moving.walk(env)).summary, 'entity_resolution').ok, 'the pass stopped');
    await moving.withDatabase(env, (db) => removeFault(db, fault));
    // A moved mention mostly collapses into its root's in the same document: what is left to
    // move is counted instead.
    const unmoved = await moving.withDatabase(
      env,
      async (db) =>
        (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM entity_mentions m
               JOIN entity_names n ON n.entity_type = m.entity_type AND n.name = m.canonical_name
              WHERE n.name <> n.canonical_name`,
          )
        ).rows[0]!.n,
    );
    assert.ok(unmoved > 0 && unmoved < counts.mentions_moved!, `${unmoved} of ${counts.mentions_moved} left to move`);
    const next = await moving.walk(env);
    assert.ok(passOf(next.summary, 'entity_resolution').ok, next.errors);
    const got = await moving.withDatabase(env, resolved);
    for (const [table, rows] of Object.entries(wanted)) assert.equal(got[table], rows, table);
  } finally {
    await moving.dispose();
  }
});

/** Each name entity_names holds, and the root it is under. */
async function namesAndRoots(db: Database): Promise<Map<string, string>> {
  const { rows } = await db.query<{ name: string; root: string }>(
    `SELECT entity_type || ' ' || name AS name, canonical_type || ' ' || canonical_name AS root FROM entity_names`,
  );
  return new Map(rows.map((r) => [r.name, r.root]));
}

test('a next walk that changes a document as well keeps what the stopped pass recorded, every name under one root', async () => {
  const corpus = path.join(root, 'changing-corpus');
  cpSync(path.join(root, 'corpus'), corpus, { recursive: true });
  const changing = new Deployments(root, corpus);
  try {
    const env = await changing.create('changing');
    const stop = stops()[0]!;
    await changing.withDatabase(env, (db) => installFault(db, stop.fault, 'fail'));
    assert.not.ok(passOf((await changing.walk(env)).summary, 'entity_resolution').ok, 'the pass stopped');
    await changing.withDatabase(env, (db) => removeFault(db, stop.fault));
    const recorded = await changing.withDatabase(env, namesAndRoots);
    assert.is(recorded.size, BATCH_NAMES, 'the first batch recorded');
    // A name of the third batch named once more, and a new variant of a root of the first.
    await appendFile(
      path.join(corpus, 'visits-5.md'),
      `\nWe met ${ALAN[2]} on visit 5.\n\nWe met Alan Turling on visit 5.\n`,
    );
    const next = await changing.walk(env);
    assert.ok(passOf(next.summary, 'entity_resolution').ok, next.errors);
    await changing.withDatabase(env, async (db) => {
      const now = await namesAndRoots(db);
      for (const [name, root] of recorded) assert.is(now.get(name), root, `${name} keeps its root`);
      assert.is(now.get('person Alan Turling'), 'person Alan Turing');
      const count = async (sql: string) =>
        (await db.query<{ n: number }>(`SELECT count(*)::int AS n ${sql}`)).rows[0]!.n;
      const root = (n: string) => `${n}.name = ${n}.canonical_name AND ${n}.entity_type = ${n}.canonical_type`;
      assert.is(
        await count(`FROM entity_names n WHERE NOT EXISTS (
                       SELECT 1 FROM entity_names r WHERE r.entity_type = n.canonical_type AND r.name = n.canonical_name AND ${root('r')})`),
        0,
        'every name maps straight to a root',
      );
      assert.is(
        await count(`FROM entity_mentions m LEFT JOIN entity_names n ON n.entity_type = m.entity_type AND n.name = m.canonical_name
                      WHERE n.name IS NULL OR NOT (${root('n')})`),
        0,
        'every mention is under a root',
      );
      assert.equal(await pendingOps(db, RESOLUTION_LEDGER), [], 'every op listed');
    });
  } finally {
    await changing.dispose();
  }
});

test.run();
