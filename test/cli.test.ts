import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadMigrations } from '../lib/db/migrate.ts';
import { openTestDatabase } from './helpers/db.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');

function ingest(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('--help lists the commands that exist', () => {
  const result = ingest(['--help'], {});
  assert.is(result.status, 0);
  assert.match(result.stdout, /ingest db migrate/);
});

test('an unknown command exits 2 with the help text', () => {
  const result = ingest(['frobnicate'], {});
  assert.is(result.status, 2);
  assert.match(result.stderr, /unknown command "frobnicate"/);
  assert.match(result.stderr, /ingest db migrate/);
});

test('a malformed knob stops the command before it starts, naming the variable', () => {
  const result = ingest(['db', 'migrate'], { INGEST_SINK_BATCH_ROWS: 'lots' });
  assert.is(result.status, 2);
  assert.match(result.stderr, /INGEST_SINK_BATCH_ROWS must be a whole number/);
});

test('db migrate applies the schema once and reports where the database lives', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ingest-cli-'));
  const target = await openTestDatabase({ migrated: false });
  const total = (await loadMigrations()).length;
  try {
    const env: Record<string, string> = { INGEST_DATA_DIR: dataDir, ...(target.dsn ? { ENGINE_DB_DSN: target.dsn } : {}) };
    const first = ingest(['db', 'migrate'], env);
    assert.is(first.status, 0, first.stderr);
    assert.match(first.stdout, target.dsn ? /database: postgres at postgresql:/ : new RegExp(`database: pglite at ${dataDir}/pglite`));
    assert.match(first.stdout, new RegExp(`migrations: ${total} applied now, 0 already applied`));
    const second = ingest(['db', 'migrate'], env);
    assert.is(second.status, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`migrations: 0 applied now, ${total} already applied`));
  } finally {
    await target.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
