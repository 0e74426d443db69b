// @engine
// The database restarted under a walk (docs/OPERATIONS.md "When the database goes away"): a real
// PostgreSQL cluster of the test's own, stopped in immediate mode (as a crash or a power cut
// leaves it) and started again 3 s later, at chosen instants (the items, a batch of entity
// resolution recorded, its mentions moving, the Q&A dedup pass, the chained producer run, the
// items of a distributed walk on two walk workers) and at seeded random ones; then one more
// walk. Every walk table, entity_names and q_a_dedup_proposals must equal an uninterrupted
// walk's, no op's mentions may wait for resolution (entity_resolution_ops lists them all), no
// pipeline_runs row may stay in progress and no job of the next walk may stay queued or running.
// Its own CI step runs it on a throwaway cluster:
//
//   npm run test:restart   (INGEST_PG_THROWAWAY=1 bash scripts/pg-with-vector.sh around this file)
//
// INGEST_FAULT_RANDOM_ROUNDS (default 2) sets how many random instants; the long form runs more.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { openLifespan, type Lifespan } from '../engine/lifespan.ts';
import { walk, type WalkSummary } from '../engine/walk/walk.ts';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { rowsInContentTerms } from './helpers/content.ts';
import { generateCorpus } from './helpers/corpus.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { mockTierEnv, startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { startWalkWorkers, stopWalkWorkers } from '../bench/walk-workers.ts';
import { walkItemQueue } from '../lib/queue/job-queue.ts';
import { contentRows, OP } from './helpers/pass-faults.ts';

const DOCS = 150;
const RESTART_AFTER_MS = 3_000;
const RANDOM_ROUNDS = Number(process.env.INGEST_FAULT_RANDOM_ROUNDS ?? 2);
const { INGEST_PG_STOP_COMMAND: STOP, INGEST_PG_START_COMMAND: START } = process.env;

let root: string;
let corpus: string;
let tier: MockTier;
let expected: Record<string, string[]>;

test.before(async () => {
  if (!STOP || !START)
    throw new Error(
      'this suite restarts its own PostgreSQL: run it under INGEST_PG_THROWAWAY=1 bash scripts/pg-with-vector.sh',
    );
  root = mkdtempSync(path.join(tmpdir(), 'ingest-database-restart-'));
  corpus = path.join(root, 'corpus');
  generateCorpus(corpus, DOCS, { mix: 'md:90,html:10', seed: 5 });
  tier = await startMockTier();
  const reference = await deployment('reference', () => {});
  try {
    const clean = await walk(reference.lifespan, { sourcePath: corpus });
    assert.is(clean.status, 'completed', clean.error);
    await reference.lifespan.producer.idle();
    expected = await everything(reference.target.db);
  } finally {
    await reference.dispose();
  }
});
test.after(async () => {
  await tier?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** The walk's tables, stage 5's own and the Q&A proposals, in content terms. */
async function everything(db: Database): Promise<Record<string, string[]>> {
  return {
    ...(await rowsInContentTerms(db)),
    entity_names: await contentRows(
      db,
      `SELECT entity_type || ' ' || name || ' -> ' || canonical_type || ' ' || canonical_name || ' ' || ${OP('op_id')}
         FROM entity_names`,
    ),
    // Ops, not their number: items redone by a second walk carry its op too.
    ops_not_resolved: await contentRows(
      db,
      `SELECT DISTINCT m.op_id::text FROM entity_mentions m
        WHERE NOT EXISTS (SELECT 1 FROM entity_resolution_ops o WHERE o.op_id = m.op_id)`,
    ),
    q_a_dedup_proposals: await contentRows(
      db,
      `SELECT da.rel_path || '#' || a.idx || ' ' || db.rel_path || '#' || b.idx || ' ' || p.status
         FROM q_a_dedup_proposals p
         JOIN q_a_extractions a ON a.id = p.q_a_extraction_a JOIN source_documents da ON da.id = a.source_document_id
         JOIN q_a_extractions b ON b.id = p.q_a_extraction_b JOIN source_documents db ON db.id = b.source_document_id`,
    ),
  };
}

/** A distributed walk: its items run on walk workers (real processes), its passes here. */
const DISTRIBUTED = {
  INGEST_WALK_MODE: 'distributed',
  INGEST_STATE_STORE: 'database',
  INGEST_WALK_SUPERVISE_SECONDS: '2',
};

/**
 * A fresh database and data directory, and `workers` walk workers on them when the walk is
 * distributed; `onLine` sees every log line of the lifespan.
 */
async function deployment(
  name: string,
  onLine: (line: { msg?: string; pass?: string; batch?: number }) => void,
  workers = 0,
) {
  const target: TestDatabase = await openTestDatabase();
  const env = {
    INGEST_DATA_DIR: path.join(root, name),
    ENGINE_DB_DSN: target.dsn!,
    INGEST_PRODUCER_AFTER_WALK: 'true',
    INGEST_LOG_LEVEL: 'debug',
    ...(workers > 0 ? DISTRIBUTED : {}),
  };
  const log = pino({ level: 'debug' }, { write: (line: string) => onLine(JSON.parse(line) as never) });
  const lifespan: Lifespan = await openLifespan(loadConfig(env, root), log);
  const children =
    workers > 0
      ? await startWalkWorkers(workers, corpus, {
          ...env,
          PATH: process.env.PATH ?? '',
          INGEST_DATA_DIR: path.join(root, `${name}-workers`),
          ...mockTierEnv(tier.mock.url),
        })
      : [];
  return {
    target,
    lifespan,
    async dispose() {
      await stopWalkWorkers(children);
      await lifespan.close();
      await target.dispose();
    },
  };
}

/** Stops the server now, synchronously (no statement of the caller's runs past it), and starts it again in 3 s. */
class Restarts {
  #back: Promise<void> | null = null;

  get done(): boolean {
    return this.#back !== null;
  }

  now(): void {
    if (this.#back !== null) return;
    const stopped = spawnSync('sh', ['-c', STOP!], { encoding: 'utf8' });
    assert.is(stopped.status, 0, stopped.stderr);
    this.#back = new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        const start = spawn('sh', ['-c', START!], { stdio: 'ignore' });
        start.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`start exited ${code}`))));
      }, RESTART_AFTER_MS),
    );
  }

  async back(): Promise<void> {
    await this.#back;
  }
}

/**
 * A deployment whose database restarts once `at` says so (on a log line or after a delay), a
 * walk over the corpus, then one more walk once the server is back: the same rows as the
 * reference, and every run row ended.
 */
async function restartedWalk(
  name: string,
  at: {
    line?: (line: { msg?: string; pass?: string; batch?: number }) => boolean;
    afterMs?: number;
    progress?: number;
  },
  workers = 0,
): Promise<WalkSummary> {
  const restarts = new Restarts();
  const d = await deployment(
    name,
    (line) => {
      if (at.line?.(line)) restarts.now();
    },
    workers,
  );
  try {
    const timer = at.afterMs === undefined ? null : setTimeout(() => restarts.now(), at.afterMs);
    const first = await walk(d.lifespan, {
      sourcePath: corpus,
      onProgress: ({ done }) => {
        if (done === at.progress) restarts.now();
      },
    });
    await d.lifespan.producer.idle();
    if (timer !== null) clearTimeout(timer);
    await restarts.back();
    const next = await walk(d.lifespan, { sourcePath: corpus });
    assert.is(next.status, 'completed', `${name}: ${next.error}`);
    await d.lifespan.producer.idle();
    const got = await everything(d.target.db);
    for (const table of Object.keys(expected)) assert.equal(got[table], expected[table], `${name}: ${table}`);
    const { rows } = await d.target.db.query<{ flow: string; status: string }>(
      `SELECT flow, status FROM pipeline_runs WHERE status = 'in_progress'`,
    );
    assert.equal(rows, [], `${name}: no run row left in progress`);
    if (workers > 0) {
      // The interrupted walk's jobs that were running when the server went are left to the
      // queue's expiry (its fencing token refuses whatever they would write); the next walk's
      // must all have ended.
      const jobs = await d.target.db.query<{ state: string }>(
        `SELECT state::text FROM pgboss.job
          WHERE name = $1 AND data->>'opId' = $2 AND state::text IN ('created', 'retry', 'active')`,
        [await walkItemQueue(d.target.db), next.opId],
      );
      assert.equal(jobs.rows, [], `${name}: no job of the next walk left waiting or running`);
    }
    return first;
  } finally {
    await restarts.back().catch(() => {});
    await d.dispose();
  }
}

const failedPass = (summary: WalkSummary, pass: string) => summary.passes.find((p) => p.name === pass)?.ok === false;

test('restarted during the items: the walk fails, the next lands every row', async () => {
  const first = await restartedWalk('items', { progress: Math.floor(DOCS / 3) });
  assert.is(first.status, 'failed');
});

test('restarted once entity resolution recorded a batch, and while its mentions move', async () => {
  const batch = await restartedWalk('resolution-batch', {
    line: (l) => l.msg === 'entity resolution batch recorded',
  });
  assert.ok(failedPass(batch, 'entity_resolution'), 'the pass was cut');
  const moving = await restartedWalk('resolution-moves', {
    line: (l) => l.msg === 'entity resolution decisions recorded; mentions moving',
  });
  assert.ok(failedPass(moving, 'entity_resolution'), 'the pass was cut');
});

test('restarted as the Q&A dedup pass starts', async () => {
  const first = await restartedWalk('qa-dedup', {
    line: (l) => l.msg === 'flow-scope pass started' && l.pass === 'qa_dedup',
  });
  assert.ok(failedPass(first, 'qa_dedup'), 'the pass was cut');
  assert.is(first.status, 'completed', 'a contained pass fails no walk');
});

test('restarted during the chained producer run', async () => {
  await restartedWalk('producer', { line: (l) => l.msg === 'producer run started' });
});

test('a distributed walk restarted during its items: coordinator and walk workers both see it', async () => {
  const first = await restartedWalk('distributed', { progress: Math.floor(DOCS / 3) }, 2);
  assert.is(first.status, 'failed');
});

test('restarted at seeded random instants of the walk', async () => {
  // A seeded sequence, so that a failure can be replayed with the same instants.
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  for (let round = 0; round < RANDOM_ROUNDS; round++)
    await restartedWalk(`random-${round}`, { afterMs: Math.round(500 + next() * 20_000) });
});

test.run();
