// @engine
// Stage 5 (i), entity resolution, over real walks on tier 1: alias variants across documents
// chain under one root canonical, mentions and relationships re-keyed, embeddings moved with
// them, item memos following, and an unchanged walk spends nothing.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { walk } from '../engine/walk/walk.ts';
import { sha256Hex } from '../lib/hash.ts';
import { entityMentionKey } from '../lib/ids.ts';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';
import { textEmbedder } from '../stages/embed.ts';
import { EntityMergeError, mergeEntities } from '../stages/resolve/merge.ts';
import { BANDS } from '../stages/resolve/names.ts';
import { RESOLUTION_LEDGER } from '../stages/resolve/pending.ts';
import { pendingOps } from '../lib/db/op-ledger.ts';
import { randomUUID } from 'node:crypto';
import { TUNING } from '../bench/names/tuning.ts';
import { resolvePair as mockPairResolver } from '../mock/pair-resolver.ts';
import { pairRequest } from '../stages/resolve/pair-resolver.ts';

const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;
let mock: MockServer;
let f: WalkFixture;
let saved: (readonly [string, string | undefined])[];

test.before.each(async () => {
  saved = VARS.map((name) => [name, process.env[name]] as const);
  mock = await startMockServer();
  Object.assign(process.env, {
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'k',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'k',
  });
  f = await walkFixture();
});
test.after.each(async () => {
  await f.dispose();
  await mock.close();
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await f.target.db.query<T>(sql, params)).rows;
}

const DOCUMENTS: Record<string, string> = {
  'a.md': '# Supply\n\nNorthwind Traders signed the supply contract with Ada Lovelace in spring.\n',
  'b.md': '# Shipping\n\nThe order left with Nortwind Traders on Monday, said Grace Hopper.\n',
  'c.md': '# Invoice\n\nNorthwind Traders Ltd sent the invoice for the spring order.\n',
  'd.md': '# Minutes\n\nNorthwind Traders will review the route plan next quarter.\n',
};

async function writeAll(): Promise<void> {
  for (const [name, text] of Object.entries(DOCUMENTS)) await f.write(name, text);
}

/** Every organisation mention by document, with its canonical and whether its id and embedding follow it. */
async function organisations() {
  return rows<{
    rel_path: string;
    id: string;
    doc: string;
    canonical_name: string;
    surface_form: string;
    hash: string | null;
  }>(
    `SELECT d.rel_path, m.id::text, d.id::text AS doc, m.canonical_name, m.surface_form, e.content_sha256 AS hash
       FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id
       LEFT JOIN record_embeddings e ON e.owner_kind = 'entity_mention' AND e.owner_id = m.id
      WHERE m.entity_type = 'organization' ORDER BY d.rel_path`,
  );
}

test('alias variants across documents chain under one root, re-keyed, their embeddings moved with them', async () => {
  await writeAll();
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.items.failed, 0, JSON.stringify(summary.failures));
  assert.equal(
    summary.passes.map((p) => [p.name, p.ok]),
    [
      ['entity_resolution', true],
      ['qa_dedup', true],
      ['url_backlink', true],
      ['cleanup', true],
    ],
  );
  const orgs = await organisations();
  assert.equal(
    orgs.map((m) => [m.rel_path, m.canonical_name, m.surface_form]),
    [
      ['a.md', 'Northwind Traders', 'Northwind Traders'],
      ['b.md', 'Northwind Traders', 'Nortwind Traders'],
      ['c.md', 'Northwind Traders', 'Northwind Traders Ltd'],
      ['d.md', 'Northwind Traders', 'Northwind Traders'],
    ],
  );
  for (const m of orgs) {
    assert.is(m.id, entityMentionKey(m.doc, 'Northwind Traders', 'organization'), `${m.rel_path}: re-keyed`);
    assert.is(m.hash, sha256Hex('Northwind Traders'), `${m.rel_path}: its embedding is of the root's name`);
  }
  const [{ orphans }] = (await rows<{ orphans: number }>(
    `SELECT count(*)::int AS orphans FROM record_embeddings e WHERE e.owner_kind = 'entity_mention'
        AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.id = e.owner_id)`,
  )) as [{ orphans: number }];
  assert.is(orphans, 0, 'no embedding without its mention');
  assert.equal(await pendingOps(f.target.db, RESOLUTION_LEDGER), [], 'no walk waits for resolution');
  // No merge chain: every name maps straight to a root, and every mention names a root.
  const [{ chains, strays }] = (await rows<{ chains: number; strays: number }>(
    `SELECT (SELECT count(*)::int FROM entity_names n JOIN entity_names r
               ON r.entity_type = n.entity_type AND r.name = n.canonical_name WHERE r.canonical_name <> r.name) AS chains,
            (SELECT count(*)::int FROM entity_mentions m WHERE NOT EXISTS (SELECT 1 FROM entity_names r
               WHERE r.entity_type = m.entity_type AND r.name = m.canonical_name AND r.canonical_name = r.name)) AS strays`,
  )) as [{ chains: number; strays: number }];
  assert.equal([chains, strays], [0, 0]);
  await assertBandsOfRootsOnly();
});

/** The shingle block's keys belong to roots, every root with its BANDS keys; a name under another root has none. */
async function assertBandsOfRootsOnly(): Promise<void> {
  const counts = await rows<{ root: boolean; n: number }>(
    `SELECT n.name = n.canonical_name AS root, count(b.band)::int AS n FROM entity_names n
       LEFT JOIN entity_root_bands b ON b.entity_type = n.entity_type AND b.name = n.name
      GROUP BY n.entity_type, n.name`,
  );
  assert.ok(counts.length > 0);
  for (const c of counts) assert.is(c.n, c.root ? BANDS : 0, JSON.stringify(c));
  const [{ strays }] = (await rows<{ strays: number }>(
    `SELECT count(*)::int AS strays FROM entity_root_bands b WHERE NOT EXISTS (SELECT 1 FROM entity_names n
       WHERE n.entity_type = b.entity_type AND n.name = b.name)`,
  )) as [{ strays: number }];
  assert.is(strays, 0);
}

test('relationships follow their endpoints to the root; the item memos follow the new keys', async () => {
  await f.write('b.md', '# Shipping\n\nNorthwind Traders shipped it.\n');
  await f.write('e.md', '# Hiring\n\nNortwind Traders hired Grace Hopper in May.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  const relations = await rows<{ source_canonical: string; target_canonical: string }>(
    `SELECT r.source_canonical, r.target_canonical FROM entity_relationships r
       JOIN source_documents d ON d.id = r.source_document_id WHERE d.rel_path = 'e.md'`,
  );
  assert.equal(relations, [{ source_canonical: 'Northwind Traders', target_canonical: 'Grace Hopper' }]);
  // The document goes: every row it owned goes with it, the re-keyed ones included.
  await rm(path.join(f.corpus, 'e.md'));
  await walk(f.lifespan, { sourcePath: f.corpus });
  const left = await rows<{ n: number }>(
    `SELECT (SELECT count(*)::int FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id
              WHERE d.rel_path = 'e.md')
          + (SELECT count(*)::int FROM entity_relationships r JOIN source_documents d ON d.id = r.source_document_id
              WHERE d.rel_path = 'e.md')
          + (SELECT count(*)::int FROM record_embeddings e WHERE e.owner_kind = 'entity_mention'
              AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.id = e.owner_id)) AS n`,
  );
  assert.equal(left, [{ n: 0 }]);
});

test('an unchanged walk resolves nothing and calls no model; a new variant later joins the root', async () => {
  await writeAll();
  await walk(f.lifespan, { sourcePath: f.corpus });
  const calls = { ...mock.stats };
  const again = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(again.items.unchanged, 4);
  assert.equal([mock.stats.messages, mock.stats.embeddings], [calls.messages, calls.embeddings]);
  await f.write('f.md', '# Later\n\nNorthwnd Traders opened a depot.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  const orgs = await organisations();
  assert.equal(orgs.find((m) => m.rel_path === 'f.md')?.canonical_name, 'Northwind Traders');
  // A changed document's mention of a decided name chains at extraction, with no pass work.
  await f.write('b.md', '# Shipping\n\nThe order left with Nortwind Traders on Tuesday.\n');
  const before = mock.stats.messages;
  await walk(f.lifespan, { sourcePath: f.corpus });
  const b = (await organisations()).find((m) => m.rel_path === 'b.md')!;
  assert.equal([b.canonical_name, b.surface_form], ['Northwind Traders', 'Nortwind Traders']);
  assert.ok(mock.stats.messages - before <= 4, 'the extractors only: no pair resolver call');
});

test('a pass that fails leaves no half-written resolution; the next walk resolves what it could not', async () => {
  await writeAll();
  // The write-back's last step refused: its transaction must leave nothing behind.
  await f.target.db.exec(`
    CREATE FUNCTION refuse_names() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'write-back refused by a test trigger'; END $$;
    CREATE TRIGGER refuse_names BEFORE INSERT ON entity_names FOR EACH ROW EXECUTE FUNCTION refuse_names();`);
  let failed;
  try {
    failed = await walk(f.lifespan, { sourcePath: f.corpus });
  } finally {
    await f.target.db.exec('DROP TRIGGER refuse_names ON entity_names; DROP FUNCTION refuse_names()');
  }
  assert.is(failed.status, 'completed');
  assert.equal(
    failed.warnings.map((w) => w.name),
    ['entity_resolution_failed'],
  );
  assert.is((await rows('SELECT 1 FROM entity_names')).length, 0);
  assert.equal(await pendingOps(f.target.db, RESOLUTION_LEDGER), [failed.opId], 'the walk waits for resolution');
  assert.equal(
    (await organisations()).map((m) => m.canonical_name),
    ['Northwind Traders', 'Nortwind Traders', 'Northwind Traders Ltd', 'Northwind Traders'],
  );
  const next = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(next.items.unchanged, 4, 'the items are not redone');
  assert.ok(next.passes[0]!.counts!.names! >= 3);
  assert.equal(
    (await organisations()).map((m) => m.canonical_name),
    ['Northwind Traders', 'Northwind Traders', 'Northwind Traders', 'Northwind Traders'],
  );
});

test('a pass stopped after its decisions, before its moves: the next walk moves the mentions and asks nothing', async () => {
  await writeAll();
  // A move inserts a variant's mention under the root's name; refused, only the decisions land.
  await f.target.db.exec(`
    CREATE FUNCTION refuse_moves() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'move refused by a test trigger'; END $$;
    CREATE TRIGGER refuse_moves BEFORE INSERT ON entity_mentions FOR EACH ROW
      WHEN (NEW.canonical_name = 'Northwind Traders' AND NEW.surface_form <> 'Northwind Traders')
      EXECUTE FUNCTION refuse_moves();`);
  let stopped;
  try {
    stopped = await walk(f.lifespan, { sourcePath: f.corpus });
  } finally {
    await f.target.db.exec('DROP TRIGGER refuse_moves ON entity_mentions; DROP FUNCTION refuse_moves()');
  }
  assert.equal(
    stopped.warnings.map((w) => w.name),
    ['entity_resolution_failed'],
  );
  const [decided] = await rows<{ root: string }>(
    `SELECT canonical_name AS root FROM entity_names WHERE entity_type = 'organization' AND name = 'Nortwind Traders'`,
  );
  assert.is(decided?.root, 'Northwind Traders', 'the decision landed');
  assert.equal(
    (await organisations()).map((m) => m.canonical_name),
    ['Northwind Traders', 'Nortwind Traders', 'Northwind Traders Ltd', 'Northwind Traders'],
    'the variants wait under the names they came with',
  );
  const asked = mock.stats.messages;
  const next = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(mock.stats.messages, asked, 'no model call: the decisions stand');
  assert.is(next.passes[0]!.counts!.mentions_moved, 2);
  const after = await organisations();
  assert.equal(
    after.map((m) => m.canonical_name),
    ['Northwind Traders', 'Northwind Traders', 'Northwind Traders', 'Northwind Traders'],
  );
  assert.ok(after.every((m) => m.hash === sha256Hex('Northwind Traders')));
  assert.equal(await pendingOps(f.target.db, RESOLUTION_LEDGER), [], 'both walks resolved');
});

test('a pair resolver that fails while the pass still has names to read fails the pass, never the walk', async () => {
  // The question goes out first (the most mentioned names lead) and is refused at once, while
  // the pass still reads candidates for the many names after it.
  for (let i = 0; i < 3; i++) await f.write(`acme-${i}.md`, `# a\n\nAcme Trading Company signed lease ${i}.\n`);
  for (let i = 0; i < 2; i++) await f.write(`typo-${i}.md`, `# t\n\nAcme Tradng Company paid rent ${i}.\n`);
  const stems = ['Alder', 'Birch', 'Cedar', 'Elm', 'Fir', 'Hazel', 'Larch', 'Maple', 'Oak', 'Pine', 'Rowan', 'Yew'];
  const kinds = ['Traders', 'Logistics', 'Bank', 'University', 'Group'];
  const others = stems.flatMap((stem) => kinds.map((kind) => `${stem} ${kind}`));
  await f.write('others.md', `# o\n\n${others.map((name) => `We met ${name} today.`).join('\n\n')}\n`);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus, failStage5: 'pair_resolver' });
  assert.is(summary.status, 'completed');
  assert.equal(summary.stage5FailureInjected, 'pair_resolver');
  assert.equal(
    summary.warnings.map((w) => w.name),
    ['entity_resolution_failed'],
  );
  const next = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.ok(next.passes[0]!.counts!.joined_by_resolver! >= 1, 'the next walk asks again, credentials restored');
  assert.equal(
    (await mentionsOf('typo-0.md')).map((m) => [m.canonical_name, m.surface_form]),
    [['Acme Trading Company', 'Acme Tradng Company']],
  );
});

/** Every entity the mentions name: its type and canonical, with the surfaces it was found as. */
async function entities() {
  return rows<{ entity_type: string; canonical_name: string; surfaces: string[] }>(
    `SELECT entity_type, canonical_name, array_agg(surface_form ORDER BY surface_form COLLATE "C") AS surfaces
       FROM entity_mentions GROUP BY entity_type, canonical_name ORDER BY canonical_name COLLATE "C", entity_type`,
  );
}

test('names a reader would join: a typo typed a person joins the organisation, a title and a month fall away', async () => {
  // Issue 41's texts: "Northwind Traders" and "... Ltd", the typo "Northwind Tradres" (which the
  // mock takes for a person), "Southwind Brewers" apart, "in March Ada Lovelace", "Dr Jane Smith".
  for (const t of TUNING.texts) await f.write(t.file, t.text);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.items.failed, 0);
  assert.equal(await entities(), [
    { entity_type: 'person', canonical_name: 'Ada Lovelace', surfaces: ['Ada Lovelace', 'Ada Lovelace'] },
    { entity_type: 'person', canonical_name: 'Jane Smith', surfaces: ['Dr Jane Smith', 'Jane Smith'] },
    {
      entity_type: 'organization',
      canonical_name: 'Northwind Traders',
      surfaces: ['Northwind Traders', 'Northwind Traders Ltd', 'Northwind Tradres'],
    },
    { entity_type: 'person', canonical_name: 'Southwind Brewers', surfaces: ['Southwind Brewers'] },
  ]);
  // The typo's mention is keyed by the type the resolver gave it, its embedding the root's.
  const [typo] = await rows<{ id: string; doc: string; hash: string }>(
    `SELECT m.id::text, m.source_document_id::text AS doc, e.content_sha256 AS hash FROM entity_mentions m
       JOIN record_embeddings e ON e.owner_kind = 'entity_mention' AND e.owner_id = m.id
      WHERE m.surface_form = 'Northwind Tradres'`,
  );
  assert.is(typo!.id, entityMentionKey(typo!.doc, 'Northwind Traders', 'organization'));
  assert.is(typo!.hash, sha256Hex('Northwind Traders'));
  assert.equal(
    await rows("SELECT entity_type, canonical_name, canonical_type FROM entity_names WHERE name = 'Northwind Tradres'"),
    [{ entity_type: 'person', canonical_name: 'Northwind Traders', canonical_type: 'organization' }],
  );
  await assertBandsOfRootsOnly();
  // Decided once: a later document's typo chains under the organisation at extraction, asking nothing.
  await f.write('t8.md', 'so Northwind Tradres paid the invoice.\n');
  const later = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(later.passes[0]!.counts?.resolver_asked, 0);
  assert.equal(
    (await mentionsOf('t8.md')).map((m) => [m.canonical_name, m.surface_form]),
    [['Northwind Traders', 'Northwind Tradres']],
  );
});

test('a person and a place both called Jordan stay apart: the resolver is asked across types and says no', async () => {
  await f.write('j.md', '# Visit\n\nThe visit was planned for spring.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  const [{ id: doc }] = (await rows<{ id: string }>(
    "SELECT id::text FROM source_documents WHERE rel_path = 'j.md'",
  )) as [{ id: string }];
  // What a real model writes for "Jordan flew to Jordan", by a walk whose pass has not run yet.
  const op = randomUUID();
  for (const type of ['person', 'location'])
    await f.target.db.query(
      `INSERT INTO entity_mentions (id, source_document_id, canonical_name, entity_type, surface_form, confidence, metadata, op_id)
       VALUES ($1, $2, 'Jordan', $3, 'Jordan', 0.9, '{}', $4)`,
      [entityMentionKey(doc, 'Jordan', type), doc, type, op],
    );
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  const counts = summary.passes[0]!.counts!;
  assert.equal([counts.names, counts.resolver_asked, counts.joined_by_resolver], [2, 1, 0]);
  assert.equal(await entities(), [
    { entity_type: 'location', canonical_name: 'Jordan', surfaces: ['Jordan'] },
    { entity_type: 'person', canonical_name: 'Jordan', surfaces: ['Jordan'] },
  ]);
  assert.equal(
    await rows(
      'SELECT entity_type, canonical_type FROM entity_names WHERE name = \'Jordan\' ORDER BY entity_type COLLATE "C"',
    ),
    [
      { entity_type: 'location', canonical_type: 'location' },
      { entity_type: 'person', canonical_type: 'person' },
    ],
  );
});

test('chaining is decided: yes to A~B and B~C, no to A~C; C goes under A through B in one pass, apart from A in a later one', async () => {
  const ask = (name: string, candidates: string[]) =>
    mockPairResolver(
      pairRequest(
        'person',
        name,
        candidates.map((n) => ({ type: 'person', name: n, normalised: n })),
      ),
    ).match;
  const said = (name: string, i: number) => f.write(`${name}-${i}.md`, `# n\n\nWe met ${name} on visit ${i}.\n`);
  const trio = async ([a, b, c]: string[]) => {
    // The mock's answers, the premise: one edit per eight letters at most, the closest winning.
    assert.equal([ask(b!, [a!]), ask(c!, [b!]), ask(c!, [a!]), ask(c!, [a!, b!])], [1, 1, null, 2]);
    for (let i = 0; i < 3; i++) await said(a!, i);
    for (let i = 0; i < 2; i++) await said(b!, i);
  };
  // One pass: A founds its root (the most mentioned), B joins it, and C, asked with A and B as
  // candidates, picks B and goes where B went.
  const grace = ['Grace Hopper', 'Grace Hoppor', 'Gracie Hoppor'];
  await trio(grace);
  await said(grace[2]!, 0);
  const one = (await walk(f.lifespan, { sourcePath: f.corpus })).passes[0]!.counts!;
  assert.equal([one.resolver_asked, one.joined_by_resolver, one.founded], [2, 2, 1]);
  // A later pass: B is no root, so C meets A alone, hears no, and founds a root of its own.
  const alan = ['Alan Turing', 'Alan Turind', 'Alen Turind'];
  await trio(alan);
  await walk(f.lifespan, { sourcePath: f.corpus });
  await said(alan[2]!, 0);
  const later = (await walk(f.lifespan, { sourcePath: f.corpus })).passes[0]!.counts!;
  assert.equal([later.resolver_asked, later.joined_by_resolver, later.founded], [1, 0, 1]);
  assert.equal(
    await rows(`SELECT name, canonical_name FROM entity_names WHERE entity_type = 'person' ORDER BY name COLLATE "C"`),
    [
      { name: 'Alan Turind', canonical_name: 'Alan Turing' },
      { name: 'Alan Turing', canonical_name: 'Alan Turing' },
      { name: 'Alen Turind', canonical_name: 'Alen Turind' },
      { name: 'Grace Hopper', canonical_name: 'Grace Hopper' },
      { name: 'Grace Hoppor', canonical_name: 'Grace Hopper' },
      { name: 'Gracie Hoppor', canonical_name: 'Grace Hopper' },
    ],
  );
});

const PIN = `metadata = metadata || '{"curation_pinned": true}'::jsonb`;

async function mentionsOf(relPath: string) {
  return rows<{
    id: string;
    canonical_name: string;
    surface_form: string;
    confidence: number;
    op_id: string;
    embedded: boolean;
  }>(
    `SELECT m.id::text, m.canonical_name, m.surface_form, m.confidence, m.op_id::text,
            EXISTS (SELECT 1 FROM record_embeddings e WHERE e.owner_kind = 'entity_mention' AND e.owner_id = m.id) AS embedded
       FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id
      WHERE d.rel_path = $1 AND m.entity_type = 'organization' ORDER BY m.canonical_name`,
    [relPath],
  );
}

test('pin site 3: after an admin rename, full_reprocess keeps the one pinned row verbatim, with its embedding', async () => {
  await f.write('first.md', '# first\n\nAcme Traders signed with Jane Doe last spring.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  // An admin merge that renamed the mention in place (its id still of the old name) and pinned it.
  await f.target.db.query(
    `UPDATE entity_mentions SET canonical_name = 'Acme Trading Company', ${PIN} WHERE canonical_name = 'Acme Traders'`,
  );
  const [pinned] = await mentionsOf('first.md');
  const full = await walk(f.lifespan, { sourcePath: f.corpus, fullReprocess: true });
  assert.is(full.items.failed, 0);
  assert.equal(await mentionsOf('first.md'), [{ ...pinned!, embedded: true }], 'one row, the pinned one, untouched');
});

test('pin site 2: a moved mention meeting a pinned key-holder of another op collapses into it', async () => {
  await f.write('x.md', '# x\n\nNorthwind Traders signed the lease.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  await f.target.db.query(
    `UPDATE entity_mentions SET confidence = 0.1, ${PIN} WHERE canonical_name = 'Northwind Traders'`,
  );
  const [pinned] = await mentionsOf('x.md');
  await f.write('x.md', '# x\n\nNorthwind Traders signed the lease.\n\nThe rent was paid by Nortwind Traders.\n');
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.passes[0]!.counts?.joined_by_resolver, 1, 'the typo went to the pair resolver and joined');
  assert.equal(await mentionsOf('x.md'), [pinned], 'the pinned holder won over confidence, unchanged');
});

test('pin site 1: pinned canonicals reach the resolver as seeds, and new mentions chain under them', async () => {
  await f.write('p.md', '# p\n\nThe depot was sold.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  // A curated mention the platform wrote itself, under a name no resolution has seen.
  const [{ id: doc }] = (await rows<{ id: string }>(
    "SELECT id::text FROM source_documents WHERE rel_path = 'p.md'",
  )) as [{ id: string }];
  await f.target.db.query(
    `INSERT INTO entity_mentions (id, source_document_id, canonical_name, entity_type, surface_form, confidence, metadata, op_id)
     VALUES ($1, $2, 'Fabrikam Bank Group', 'organization', 'Fabrikam', 1, '{"curation_pinned": true}', gen_random_uuid())`,
    [entityMentionKey(doc, 'Fabrikam Bank Group', 'organization'), doc],
  );
  await f.write('q.md', '# q\n\nFabrikam Bnk Group bought the depot.\n');
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(
    (await mentionsOf('q.md')).map((m) => [m.canonical_name, m.surface_form]),
    [['Fabrikam Bank Group', 'Fabrikam Bnk Group']],
  );
  assert.is(summary.passes[0]!.counts?.joined_by_resolver, 1);
  const pinned = await rows('SELECT canonical_name, surface_form FROM entity_mentions WHERE source_document_id = $1', [
    doc,
  ]);
  assert.equal(
    pinned,
    [{ canonical_name: 'Fabrikam Bank Group', surface_form: 'Fabrikam' }],
    'the curated row is untouched',
  );
});

const merge = (into: string, mentions: string[]) =>
  mergeEntities(
    f.target.db,
    f.lifespan.store,
    textEmbedder({ client: f.lifespan.models.embedder, queue: f.lifespan.models.queue }),
    { into, mentions },
  );

async function acmeCorpus(): Promise<{ a: string; b: string }> {
  await f.write('a.md', '# a\n\nAcme Trading Company signed the lease with Ada Lovelace.\n');
  await f.write('b.md', '# b\n\nWestfield Holdings Group paid the rent.\n');
  await f.write('c.md', '# c\n\nWestfield Holdings Group shipped the goods.\n');
  await walk(f.lifespan, { sourcePath: f.corpus });
  const [a] = await mentionsOf('a.md');
  const [b] = await mentionsOf('b.md');
  return { a: a!.id, b: b!.id };
}

test('admin merge: every mention of the merged canonical moves under the target, pinned, its name an alias', async () => {
  const { a, b } = await acmeCorpus();
  const result = await merge(a, [b]);
  assert.equal(result, { merged: 2, mentions_pinned: 3 });
  const gone = await merge(a, [b]).catch((e: unknown) => e);
  assert.is((gone as EntityMergeError).code, 'mention_not_found', 'a moved mention is written under a new id');
  assert.match((gone as Error).message, new RegExp(`^no entity mention ${b} \\(a mention moved .* takes a new id`));
  for (const doc of ['a.md', 'b.md', 'c.md']) {
    const [m] = await mentionsOf(doc);
    assert.is(m!.canonical_name, 'Acme Trading Company', doc);
    assert.ok(m!.embedded, `${doc}: its embedding moved with it`);
  }
  const [meta] = await rows<{ metadata: { curation_pinned: boolean; aliases: string[] } }>(
    "SELECT metadata FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id WHERE d.rel_path = 'c.md'",
  );
  assert.equal(meta!.metadata, { curation_pinned: true, aliases: ['Westfield Holdings Group'] });
  assert.equal(await rows("SELECT canonical_name FROM entity_names WHERE name = 'Westfield Holdings Group'"), [
    { canonical_name: 'Acme Trading Company' },
  ]);
  await assertBandsOfRootsOnly();
  // A later mention of the merged name chains under the target at extraction.
  await f.write('d.md', '# d\n\nWestfield Holdings Group opened a depot.\n');
  const later = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(later.passes[0]!.counts?.names, 0, 'nothing left for the pass to decide');
  assert.is((await mentionsOf('d.md'))[0]!.canonical_name, 'Acme Trading Company');
});

test('admin merge: an unknown mention or another type is a named error, and nothing changes', async () => {
  const { a } = await acmeCorpus();
  const missing = await merge(a, ['00000000-0000-4000-8000-000000000000']).catch((e: unknown) => e);
  assert.instance(missing, EntityMergeError);
  assert.is((missing as EntityMergeError).code, 'mention_not_found');
  const [person] = await rows<{ id: string }>(
    "SELECT id::text FROM entity_mentions WHERE entity_type = 'person' LIMIT 1",
  );
  if (person !== undefined) {
    const mismatch = await merge(a, [person.id]).catch((e: unknown) => e);
    assert.is((mismatch as EntityMergeError).code, 'type_mismatch');
  }
  assert.is((await mentionsOf('b.md'))[0]!.canonical_name, 'Westfield Holdings Group');
});

test('admin merge: a fault in the pin step is reported as mentions_pin_error; the merge stands', async () => {
  const { a, b } = await acmeCorpus();
  await f.target.db.exec(`
    CREATE FUNCTION refuse_pin() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.metadata ? 'curation_pinned' THEN RAISE EXCEPTION 'pin refused by a test trigger'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER refuse_pin BEFORE UPDATE ON entity_mentions FOR EACH ROW EXECUTE FUNCTION refuse_pin();`);
  try {
    const result = await merge(a, [b]);
    assert.is(result.merged, 2);
    assert.match(result.mentions_pin_error ?? '', /pin refused by a test trigger/);
    assert.is(result.mentions_pinned, undefined);
    assert.is((await mentionsOf('b.md'))[0]!.canonical_name, 'Acme Trading Company', 'the merge committed');
  } finally {
    await f.target.db.exec('DROP TRIGGER refuse_pin ON entity_mentions; DROP FUNCTION refuse_pin()');
  }
});

test.run();
