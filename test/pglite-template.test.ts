// A new embedded database is a copy of the ready-made one (lib/db/pglite-template.ts): made by
// the installed PGlite with every migration of schema/, used for a new data directory, made
// again over what a killed copy left, and not used by another PGlite build. PGlite only.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadMigrations } from '../lib/db/migrate.ts';
import { openPglite } from '../lib/db/pglite.ts';
import { pgliteVersions } from '../lib/db/pglite-wasm.ts';
import { placeTemplate, readTemplateRecord, TEMPLATE } from '../lib/db/pglite-template.ts';
import { targetEngine } from './helpers/db.ts';
import { inTempDir } from './helpers/temp-dir.ts';

/** The migrations a database records, and when the first was applied. */
async function recorded(dataDir: string): Promise<{ versions: number[]; firstAppliedAt: Date }> {
  const db = await openPglite(dataDir);
  try {
    const { rows } = await db.query<{ version: number; applied_at: Date }>(
      'SELECT version, applied_at FROM schema_migrations ORDER BY version',
    );
    return { versions: rows.map((row) => row.version), firstAppliedAt: rows[0]!.applied_at };
  } finally {
    await db.close();
  }
}

if (targetEngine === 'pglite') {
  test('the ready-made database was made by the installed PGlite and holds every migration of schema/', async () => {
    const record = await readTemplateRecord();
    const due = 'make it again: npx node scripts/make-pglite-template.ts';
    assert.equal({ pglite: record.pglite, pgvector: record.pgvector }, await pgliteVersions(), due);
    const migrations = await loadMigrations();
    assert.equal(record.migrations, Object.fromEntries(migrations.map((m) => [String(m.version), m.checksum])), due);
  });

  test('a new data directory is a copy of the ready-made database, its migrations applied before this run', async () => {
    await inTempDir(async (dir) => {
      const startedAt = new Date();
      const { versions, firstAppliedAt } = await recorded(path.join(dir, 'pglite'));
      assert.equal(
        versions,
        (await loadMigrations()).map((m) => m.version),
      );
      assert.ok(firstAppliedAt < startedAt, `applied at ${firstAppliedAt.toISOString()}: no copy was used`);
    });
  });

  test('a copy killed halfway (no PG_VERSION yet) is made again over what it left', async () => {
    await inTempDir(async (dir) => {
      const dataDir = path.join(dir, 'pglite');
      mkdirSync(path.join(dataDir, '.template', 'base'), { recursive: true });
      mkdirSync(path.join(dataDir, 'base'), { recursive: true });
      writeFileSync(path.join(dataDir, 'base', 'half-written'), 'x');
      const { versions } = await recorded(dataDir);
      assert.is(versions.length, (await loadMigrations()).length);
      assert.not.ok(existsSync(path.join(dataDir, 'base', 'half-written')));
      assert.not.ok(existsSync(path.join(dataDir, '.template')));
    });
  });

  test('a ready-made database of another PGlite build is not used', async () => {
    await inTempDir(async (dir) => {
      const record = path.join(dir, 'record.json');
      writeFileSync(record, JSON.stringify({ ...(await readTemplateRecord()), pglite: '0.0.1' }));
      const dataDir = path.join(dir, 'pglite');
      mkdirSync(dataDir);
      assert.is(await placeTemplate(dataDir, { archive: TEMPLATE.archive, record }), false);
      assert.not.ok(existsSync(path.join(dataDir, 'PG_VERSION')));
      assert.is(await placeTemplate(dataDir), true);
      assert.ok(existsSync(path.join(dataDir, 'PG_VERSION')));
    });
  });
}

test.run();
