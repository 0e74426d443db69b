// @engine
// Two walks in one process at once (issue 42): each on its own lifespan (its own database,
// corpus, state store and model endpoint), their items in flight together. Every row a walk
// writes carries that walk's op_id, each walk's counters and run record count only its own
// model retries, and each walk's stage observer hears only its own items.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { walk, type WalkSummary } from '../engine/walk/walk.ts';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { serveHttp, type LoopbackServer } from './helpers/loopback.ts';
import { mockTierEnv } from './helpers/mock-tier.ts';
import { markdown, walkFixture, type WalkFixture } from './helpers/walk.ts';

const WALKS = ['a', 'b'] as const;
type Name = (typeof WALKS)[number];
/** Different counts, so that a walk counting the other's items shows. */
const FILES: Record<Name, number> = { a: 2, b: 3 };
/** The tables every walk here writes to (no name in these documents makes a mention). */
const ROW_TABLES = ['source_documents', 'content_chunks', 'record_embeddings'];

const mocks = {} as Record<Name, MockServer>;
const forwarders = {} as Record<Name, LoopbackServer>;
const fixtures = {} as Record<Name, WalkFixture>;
const savedEnv = { ...process.env };

/**
 * Each walk's model endpoint is its own mock behind a forwarder that holds every request until
 * both walks have made one: the walks' items are then in flight together, and each goes on
 * (extraction, embeddings) after the other began.
 */
function forwarderTo(target: string, arrived: Set<Name>, name: Name, bothArrived: Promise<void>, open: () => void) {
  return serveHttp((req, res) => {
    arrived.add(name);
    if (arrived.size === WALKS.length) open();
    void bothArrived.then(() => {
      const upstream = http.request(
        new URL(req.url ?? '/', target),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
  });
}

test.before(async () => {
  const arrived = new Set<Name>();
  let open!: () => void;
  const bothArrived = new Promise<void>((resolve) => (open = resolve));
  for (const name of WALKS) {
    // Walk a's model endpoint rate-limits a third of its calls (each heals with one retry);
    // walk b's never does. The lifespan's clients read the environment as it stands at open.
    mocks[name] = await startMockServer(name === 'a' ? { faultRate: 0.3, faults: ['429'], seed: 7 } : {});
    forwarders[name] = await forwarderTo(mocks[name].url, arrived, name, bothArrived, open);
    Object.assign(process.env, mockTierEnv(forwarders[name].origin));
    const f = await walkFixture({ passes: [] });
    for (let i = 0; i < FILES[name]; i += 1) await f.write(`${name}-${i}.md`, markdown(`Walk ${name} doc ${i}`, 3));
    fixtures[name] = f;
  }
});

test.after(async () => {
  for (const name of WALKS) {
    await fixtures[name]?.dispose();
    await forwarders[name]?.close();
    await mocks[name]?.close();
  }
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});

test('two walks at once: each row, counter, run record and stage timing is its own walk’s', async () => {
  const stages: Record<Name, Map<string, number>> = { a: new Map(), b: new Map() };
  const summaries = await Promise.all(
    WALKS.map((name) =>
      walk(fixtures[name].lifespan, {
        sourcePath: fixtures[name].corpus,
        observeStage: (stage) => stages[name].set(stage, (stages[name].get(stage) ?? 0) + 1),
      }),
    ),
  );
  const summary = Object.fromEntries(WALKS.map((name, i) => [name, summaries[i]!])) as Record<Name, WalkSummary>;
  assert.is.not(summary.a.opId, summary.b.opId);
  // Walk a's endpoint did inject faults, so a counter that leaked would show.
  assert.ok(mocks.a.stats.faultsInjected > 0, 'walk a met rate limits');
  assert.is(mocks.b.stats.faultsInjected, 0);

  // On PGlite the two fixtures share one database, on PostgreSQL each has its own: either way,
  // every row belongs to the walk of its document or article, and carries that walk's op_id.
  const written = new Set<string>();
  for (const name of WALKS) {
    const { lifespan, target } = fixtures[name];
    const s = summary[name];
    assert.is(s.status, 'completed', `${name}: ${s.error ?? ''} ${JSON.stringify(s.failures)}`);
    assert.equal(
      { changed: s.items.changed, failed: s.items.failed },
      { changed: FILES[name], failed: 0 },
      `${name} changed every file`,
    );
    // Every retry of walk a is a fault of its own endpoint; walk b retried nothing.
    assert.is(s.counters.model_retry, mocks[name].stats.faultsInjected, `${name}'s model_retry`);
    const { rows: runs } = await target.db.query<{ result: { counters: Record<string, number> } }>(
      'SELECT result FROM pipeline_runs WHERE op_id = $1::uuid',
      [s.opId],
    );
    assert.equal(
      runs.map((r) => r.result.counters),
      [s.counters],
      `${name}'s run record`,
    );
    assert.is(stages[name].get('convert'), FILES[name], `${name}'s observer timed its own conversions`);
    assert.ok(lifespan.walkLock.running === false);
    for (const row of await rowsByWalk(target)) written.add(`${row.table} ${row.walk} ${row.op_id}`);
  }
  const expected = ROW_TABLES.flatMap((table) => WALKS.map((name) => `${table} ${name} ${summary[name].opId}`));
  for (const row of expected) assert.ok(written.has(row), `written: ${row}`);
  const foreign = [...written].filter((row) => {
    const [, name, opId] = row.split(' ');
    return summary[name as Name].opId !== opId;
  });
  assert.equal(foreign, [], "rows that carry the other walk's op_id");
});

/** (table, walk, op_id) of every row written, the walk told by its document's path. */
async function rowsByWalk(target: WalkFixture['target']): Promise<{ table: string; walk: string; op_id: string }[]> {
  const { rows } = await target.db.query<{ table: string; walk: string; op_id: string }>(
    `WITH owner AS (
       SELECT id, split_part(rel_path, '-', 1) AS walk FROM source_documents
     ), owned AS (
       SELECT 'source_documents' AS t, id AS owner, op_id FROM source_documents
       UNION ALL SELECT 'content_chunks', COALESCE(source_document_id, reference_item_id), op_id FROM content_chunks
       UNION ALL SELECT 'q_a_extractions', source_document_id, op_id FROM q_a_extractions
       UNION ALL SELECT 'entity_mentions', COALESCE(source_document_id, reference_item_id), op_id FROM entity_mentions
       UNION ALL SELECT 'entity_relationships', source_document_id, op_id FROM entity_relationships
       UNION ALL SELECT 'record_embeddings', k.owner, e.op_id FROM record_embeddings e JOIN (
         SELECT 'content_chunk' AS kind, id, COALESCE(source_document_id, reference_item_id) AS owner FROM content_chunks
         UNION ALL SELECT 'q_a_extraction', id, source_document_id FROM q_a_extractions
         UNION ALL SELECT 'entity_mention', id, source_document_id FROM entity_mentions
       ) k ON k.kind = e.owner_kind AND k.id = e.owner_id
     )
     SELECT DISTINCT owned.t AS table, owner.walk, owned.op_id::text AS op_id
     FROM owned LEFT JOIN owner ON owner.id = owned.owner`,
  );
  return rows;
}

test.run();
