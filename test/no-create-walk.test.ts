// @engine
// A walk runs no DDL: `ingest walk` on PostgreSQL under a role that may read and write rows and
// create nothing (test/helpers/no-create-role.ts) takes the writer fence, walks, runs its passes
// and walks again unchanged, with the state store in its directory and in the database. A
// library or a pass that created a table, an index or a partition at run time fails here.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN } from './helpers/corpus.ts';
import { openTestDatabase, targetEngine } from './helpers/db.ts';
import { createNoCreateRole } from './helpers/no-create-role.ts';
import { markdown } from './helpers/walk.ts';

/** `ingest walk` as a user runs it, on the in-process mock, its output. */
function ingestWalk(env: Record<string, string>, corpus: string) {
  const run = spawnSync(process.execPath, [BIN, 'walk', corpus], {
    env: { PATH: process.env.PATH, INGEST_LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8',
  });
  assert.is(run.status, 0, `${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

if (targetEngine === 'postgres') {
  for (const store of ['directory', 'database']) {
    test(`a walk and an unchanged walk under a role without CREATE, the state store in the ${store}`, async () => {
      const t = await openTestDatabase();
      const role = await createNoCreateRole(t.dsn!);
      const root = mkdtempSync(path.join(tmpdir(), 'ingest-no-create-'));
      try {
        const corpus = path.join(root, 'corpus');
        await mkdir(corpus);
        await writeFile(path.join(corpus, 'handbook.md'), markdown('Handbook', 12));
        await writeFile(path.join(corpus, 'travel.md'), markdown('Travel policy', 4));
        const env = { ENGINE_DB_DSN: role.dsn, INGEST_DATA_DIR: path.join(root, 'data'), INGEST_STATE_STORE: store };
        assert.match(ingestWalk(env, corpus), /items: 2 seen, 2 changed, 0 unchanged, 0 failed/);
        assert.match(ingestWalk(env, corpus), /items: 2 seen, 0 changed, 2 unchanged, 0 failed/);
        const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM source_documents');
        assert.is(rows[0]!.n, 2);
      } finally {
        rmSync(root, { recursive: true, force: true });
        await role.dispose();
        await t.dispose();
      }
    });
  }
}

test.run();
