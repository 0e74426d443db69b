// A new embedded database is a copy of a ready-made empty one: pglite-template.tar.gz beside this
// file, initdb's output with schema/'s migrations applied, made by scripts/make-pglite-template.ts.
// initdb inside WebAssembly took some 2.5 s and 580 MB in a process of its own, beside the walk's
// and the database's, so a newcomer's first walk peaked at 830 MB; unpacking the copy costs a
// fraction of a second and no PostgreSQL (bench/README.md "The first walk").
//
// A data directory opens only in the PGlite build that wrote it, so the copy is used only when
// the installed pair is the one that made it (pglite-template.json); otherwise the database is
// created by initdb as before. Migrations added since the copy was made are applied on open, as
// on any database.

import { mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { extract } from 'tar';
import { pgliteVersions } from './pglite-wasm.ts';

/** The ready-made database's archive and the record of what made it. */
export interface Template {
  archive: string;
  record: string;
}

export const TEMPLATE: Template = Object.freeze({
  archive: new URL('./pglite-template.tar.gz', import.meta.url).pathname,
  record: new URL('./pglite-template.json', import.meta.url).pathname,
});

/** What made the ready-made database, and which of schema/'s migrations it holds. */
export interface TemplateRecord {
  pglite: string;
  pgvector: string;
  /** schema_migrations' checksums by version. */
  migrations: Record<string, string>;
}

export async function readTemplateRecord(template: Template = TEMPLATE): Promise<TemplateRecord> {
  return JSON.parse(await readFile(template.record, 'utf8')) as TemplateRecord;
}

/** The file PGlite looks for to tell an existing database from a directory to initdb: placed last. */
const MARKER = 'PG_VERSION';
/** Where the copy is unpacked, inside the data directory, before its entries move into place. */
const STAGING = '.template';

/**
 * Unpacks the ready-made database into `dataDir` (which holds no database: no PG_VERSION) and
 * says whether it did; false when the installed PGlite is not the one that made it. Killed
 * halfway, it leaves no PG_VERSION, so the next open unpacks it again over what it left.
 */
export async function placeTemplate(dataDir: string, template: Template = TEMPLATE): Promise<boolean> {
  const made = await readTemplateRecord(template);
  const installed = await pgliteVersions();
  if (made.pglite !== installed.pglite || made.pgvector !== installed.pgvector) return false;
  const staging = path.join(dataDir, STAGING);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging);
  // Synchronously: nothing else waits in the database's process yet, and node-tar's synchronous
  // path unpacked the copy's 1,200 files in about half the time of its asynchronous one.
  extract({ file: template.archive, cwd: staging, strict: true, sync: true });
  const entries = (await readdir(staging)).filter((entry) => entry !== MARKER);
  for (const entry of [...entries, MARKER]) {
    await rm(path.join(dataDir, entry), { recursive: true, force: true });
    await rename(path.join(staging, entry), path.join(dataDir, entry));
  }
  await rm(staging, { recursive: true });
  return true;
}
