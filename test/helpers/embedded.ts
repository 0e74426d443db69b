// Seeds a fresh data directory with a migrated embedded database. Starting PGlite on an empty
// directory costs seconds (initdb in WebAssembly, then the reference schema); a copy of one
// migrated directory opens in under one, and is what a deployment's second start sees. Tests
// that start `ingest` processes or sidecars on new data directories seed them first, unless
// what they test is the first start itself. On PostgreSQL (ENGINE_DB_DSN) nothing is seeded:
// the embedded database is not the one under test there.

import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lib/config.ts';
import { openDatabase } from '../../lib/db/open.ts';

let template: Promise<string> | null = null;

async function migratedTemplate(): Promise<string> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-embedded-template-'));
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  const config = loadConfig({ INGEST_DATA_DIR: root }, root);
  const db = await openDatabase(config);
  await db.close();
  return config.database.embeddedDir;
}

/**
 * Copies a migrated embedded database into `dataDir` (created if missing) when the run is on
 * PGlite and the directory holds none yet.
 */
export async function seedDataDir(dataDir: string): Promise<void> {
  if (process.env.ENGINE_DB_DSN) return;
  const target = loadConfig({ INGEST_DATA_DIR: dataDir }, dataDir).database.embeddedDir;
  if (existsSync(target)) return;
  const source = await (template ??= migratedTemplate());
  cpSync(source, target, { recursive: true });
}
