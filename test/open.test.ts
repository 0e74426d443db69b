// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { SchemaMissingError } from '../lib/db/schema-check.ts';
import { openTestDatabase, targetEngine } from './helpers/db.ts';

if (targetEngine === 'pglite') {
  test('the embedded database is created, bootstrapped and persisted under INGEST_DATA_DIR', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'ingest-open-'));
    try {
      const config = loadConfig({ INGEST_DATA_DIR: dataDir }, '/');
      const first = await openDatabase(config);
      assert.is(first.kind, 'pglite');
      assert.is(first.location, path.join(dataDir, 'pglite'));
      await first.query(
        `INSERT INTO source_documents (id, rel_path, content_sha256, byte_size, media_type, op_id)
         VALUES ('00000000-0000-4000-8000-000000000001', 'a.md', 'h', 1, 'text/markdown', '00000000-0000-4000-8000-000000000002')`,
      );
      await first.close();
      const again = await openDatabase(config);
      const { rows } = await again.query<{ rel_path: string }>('SELECT rel_path FROM source_documents');
      assert.equal(rows, [{ rel_path: 'a.md' }]);
      await again.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
} else {
  test('opening a real PostgreSQL runs no DDL: its schema is the platform’s, and one never migrated is refused', async () => {
    const target = await openTestDatabase({ migrated: false });
    try {
      const config = loadConfig({ ENGINE_DB_DSN: target.dsn! }, '/');
      await openDatabase(config).then(
        () => assert.unreachable('expected a SchemaMissingError'),
        (error: unknown) => assert.instance(error, SchemaMissingError),
      );
      const db = await openDatabase(config, { uses: [] });
      assert.is(db.kind, 'postgres');
      const { rows } = await db.query<{ found: string | null }>(
        "SELECT to_regclass('schema_migrations')::text AS found",
      );
      assert.is(rows[0]?.found, null);
      await db.close();
    } finally {
      await target.dispose();
    }
  });
}

test.run();
