// @engine
// The writer fence on PostgreSQL (docs/behaviour/states.md#writer-fence-and-single-flight): a lease
// row in the database, so walks of processes with different data and state directories exclude
// each other, and a fencing token that every write of a walk checks, so a walk whose lease passed
// to another writes nothing more. PostgreSQL only: PGlite keeps the lease file, which one process
// owns with its embedded database (test/lease.test.ts covers it on both engines).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { withTier1 } from '../cli/tier1.ts';
import { openLifespan, type Lifespan } from '../engine/lifespan.ts';
import { writerFence } from '../engine/walk/fence.ts';
import { fencedCorpusWalk } from '../engine/trigger/fenced-walk.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { rowsInContentTerms } from './helpers/content.ts';
import { targetEngine } from './helpers/db.ts';
import { markdown, walkFixture, type WalkFixture } from './helpers/walk.ts';

const FILES = 40;
const ENV = { INGEST_WALK_IN_FLIGHT: '2', INGEST_FENCE_STALE_MS: '2000' };

async function writeCorpus(f: WalkFixture): Promise<void> {
  for (let i = 0; i < FILES; i++) await f.write(`doc-${String(i).padStart(2, '0')}.md`, markdown(`Document ${i}`, 3));
}

/** Another deployment on the same database: a data directory, and so a state directory, of its own. */
async function otherDeployment(db: Database): Promise<{ lifespan: Lifespan; dispose(): Promise<void> }> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-other-'));
  const env = { INGEST_DATA_DIR: root, INGEST_PRODUCER_AFTER_WALK: 'false', ...ENV };
  const log = pino({ level: 'silent' });
  const lifespan = await withTier1(log, () => openLifespan(loadConfig(env, root), log, { db }));
  return {
    lifespan,
    async dispose() {
      await lifespan.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function runs(db: Database): Promise<{ status: string; error: string | null }[]> {
  const { rows } = await db.query<{ status: string; error: string | null }>(
    "SELECT status, result->>'error' AS error FROM pipeline_runs ORDER BY started_at",
  );
  return rows;
}

if (targetEngine === 'postgres') {
  test('two walks with different data directories on one database: the second ends fence_busy', async () => {
    const f = await walkFixture({ env: ENV });
    const other = await otherDeployment(f.target.db);
    try {
      await writeCorpus(f);
      let second: Promise<WalkSummary | null> | undefined;
      const first = await fencedCorpusWalk(f.lifespan, f.corpus, {
        // Asked while the first walk is under way, as a second coordinator on another machine would.
        onProgress: () => void (second ??= fencedCorpusWalk(other.lifespan, f.corpus)),
      });
      assert.is(first?.status, 'completed');
      assert.is(first?.items.changed, FILES);
      assert.is(await second, null, 'the second walk made no pass');
      assert.equal((await runs(f.target.db)).map((r) => r.status).sort(), ['completed', 'fence_busy']);
      const again = await fencedCorpusWalk(other.lifespan, f.corpus);
      assert.is(again?.status, 'completed', 'the fence is free once the first walk ended');
    } finally {
      await other.dispose();
      await f.dispose();
    }
  });

  test('every acquisition of the fence carries a new, larger token; a busy try takes none', async () => {
    const f = await walkFixture({ env: ENV });
    const other = await otherDeployment(f.target.db);
    const token = async () =>
      (await f.target.db.query<{ token: string }>('SELECT token::text AS token FROM engine_leases')).rows.map((r) =>
        Number(r.token),
      );
    try {
      await fencedCorpusWalk(f.lifespan, f.corpus);
      assert.equal(await token(), [1]);
      await fencedCorpusWalk(other.lifespan, f.corpus);
      assert.equal(await token(), [2]);
      let busy: Promise<WalkSummary | null> | undefined;
      await writeCorpus(f);
      await fencedCorpusWalk(f.lifespan, f.corpus, {
        onProgress: () => void (busy ??= fencedCorpusWalk(other.lifespan, f.corpus)),
      });
      assert.is(await busy, null);
      assert.equal(await token(), [3], 'the busy try left the token as it was');
    } finally {
      await other.dispose();
      await f.dispose();
    }
  });

  test('a walk whose lease is taken over mid-walk lands nothing after that instant; the next walk completes it', async () => {
    const f = await walkFixture({ env: ENV });
    const uninterrupted = await walkFixture({ env: ENV });
    try {
      await writeCorpus(f);
      let atTakeover: Promise<Record<string, string[]>> | undefined;
      const lost = await fencedCorpusWalk(f.lifespan, f.corpus, {
        onProgress: ({ done }) => {
          if (done < 5 || atTakeover !== undefined) return;
          // Another walk takes the lease over (its holder's lease expired and it acquired one):
          // the token moves on. What is durable once that committed is all this walk may land.
          atTakeover = f.target.db
            .query("UPDATE engine_leases SET token = token + 1, holder = 'the next walk' WHERE name = 'writer_fence'")
            .then(() => rowsInContentTerms(f.target.db));
        },
      });
      assert.ok(atTakeover !== undefined, 'the takeover happened mid-walk');
      const landed = await atTakeover;
      assert.is(lost?.status, 'failed');
      assert.match(lost?.error ?? '', /^fence_lost: /);
      assert.ok(lost!.items.changed < FILES, `${lost!.items.changed} items changed`);
      assert.is(lost!.items.failed, 0, 'the refused items are no item failures: the next walk redoes them');
      assert.equal(lost!.passes, [], 'no flow-scope pass ran');
      assert.equal(await rowsInContentTerms(f.target.db), landed, 'nothing landed after the takeover');
      const record = (await runs(f.target.db)).at(-1);
      assert.is(record?.status, 'failed');
      assert.match(record?.error ?? '', /^fence_lost: /);

      // The next walk's holder ended: its lease expired.
      await f.target.db.query("UPDATE engine_leases SET expires_at = now() WHERE name = 'writer_fence'");
      const next = await fencedCorpusWalk(f.lifespan, f.corpus);
      assert.is(next?.status, 'completed');
      assert.is(next!.items.changed + next!.items.unchanged, FILES);
      assert.ok(next!.items.changed > 0, 'the items the lost walk did not commit were redone');

      await writeCorpus(uninterrupted);
      assert.is((await fencedCorpusWalk(uninterrupted.lifespan, uninterrupted.corpus))?.status, 'completed');
      assert.equal(await rowsInContentTerms(f.target.db), await rowsInContentTerms(uninterrupted.target.db));
    } finally {
      await uninterrupted.dispose();
      await f.dispose();
    }
  });

  test('a renewal that finds the lease taken over marks the hold lost, which stops its walk', async () => {
    const f = await walkFixture({ env: ENV });
    const config = { stateStorePath: path.join(f.root, 'state'), fenceStaleMs: 200 };
    try {
      const hold = await writerFence(config, f.target.db).tryAcquire();
      assert.ok(hold !== null);
      await sleep(300);
      assert.is(hold.lost, null, 'renewed past its stale time');
      // The holder stalled past the expiry and another walk acquired.
      await f.target.db.query(
        "UPDATE engine_leases SET token = token + 1, expires_at = now() + interval '1 hour' WHERE name = 'writer_fence'",
      );
      await sleep(150);
      assert.match(hold.lost?.message ?? '', /^fence_lost: /);
      assert.is(await writerFence(config, f.target.db).tryAcquire(), null, 'the new holder keeps the fence');
      await hold.release();
      assert.is(await writerFence(config, f.target.db).tryAcquire(), null, "a lost hold's release frees nothing");
    } finally {
      await f.dispose();
    }
  });

  test('a holder killed in this pid namespace frees the fence at once, long before its lease expires', async () => {
    const f = await walkFixture({ env: ENV });
    const config = { stateStorePath: path.join(f.root, 'state'), fenceStaleMs: 60_000 };
    const module = (file: string) => JSON.stringify(path.resolve(import.meta.dirname, '..', file));
    const script = `
      const { writerFence } = await import(${module('engine/walk/fence.ts')});
      const { openPostgres } = await import(${module('lib/db/postgres.ts')});
      const db = await openPostgres(${JSON.stringify(f.target.dsn)});
      if ((await writerFence(${JSON.stringify(config)}, db).tryAcquire()) === null) throw new Error('busy');
      process.stdout.write('held\\n');
      setInterval(() => {}, 1000);`;
    const holder = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise((resolve) => holder.stdout.once('data', resolve));
      assert.is(await writerFence(config, f.target.db).tryAcquire(), null, 'held by a live process');
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
      const hold = await writerFence(config, f.target.db).tryAcquire();
      assert.ok(hold !== null, 'taken over at once');
      await hold.release();
    } finally {
      holder.kill('SIGKILL');
      await f.dispose();
    }
  });
}

test.run();
