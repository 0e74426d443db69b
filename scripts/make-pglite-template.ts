// Makes the ready-made empty embedded database a new data directory is copied from
// (lib/db/pglite-template.ts says why): initdb in the way a data directory is created without
// it, schema/'s migrations applied, the database closed cleanly, then packed with the versions
// that made it. Run it after a bump of PGlite or pgvector and after adding a migration
// (test/pglite-template.test.ts says when it is due):
//
//   npx node scripts/make-pglite-template.ts

import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { create } from 'tar';
import { migrate } from '../lib/db/migrate.ts';
import { openPglite } from '../lib/db/pglite.ts';
import { pgliteVersions } from '../lib/db/pglite-wasm.ts';
import { TEMPLATE, type TemplateRecord } from '../lib/db/pglite-template.ts';
import { DATABASE_PROCESS_V8_FLAGS } from '../lib/v8-flags.ts';

const scratch = await mkdtemp(path.join(tmpdir(), 'ingest-pglite-template-'));
const dataDir = path.join(scratch, 'pglite');
try {
  const init = new URL('../lib/db/pglite-init.ts', import.meta.url).pathname;
  await promisify(execFile)(process.execPath, [...DATABASE_PROCESS_V8_FLAGS, init, dataDir]);
  const db = await openPglite(dataDir);
  let migrations: TemplateRecord['migrations'];
  try {
    await migrate(db);
    const { rows } = await db.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations ORDER BY version',
    );
    migrations = Object.fromEntries(rows.map((row) => [String(row.version), row.checksum]));
  } finally {
    await db.close();
  }
  // The lease of the process that had it open is no part of a database.
  await rm(path.join(dataDir, 'ingest.lock'), { force: true });
  await create({ file: TEMPLATE.archive, cwd: dataDir, gzip: { level: 9 }, portable: true }, await readdir(dataDir));
  const record: TemplateRecord = { ...(await pgliteVersions()), migrations };
  await writeFile(TEMPLATE.record, `${JSON.stringify(record, null, 2)}\n`);
  console.log(`${path.relative(process.cwd(), TEMPLATE.archive)}: ${Object.keys(migrations).length} migrations`);
} finally {
  await rm(scratch, { recursive: true, force: true });
}
