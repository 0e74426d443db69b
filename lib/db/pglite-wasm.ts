// PGlite (PostgreSQL as WebAssembly) with the pgvector extension: the one module that imports
// either package, so a bump of their pinned pair stays here
// (docs/behaviour/versioning.md#dependency-pins).

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';

export type PgliteInstance = PGlite;

/** Opens (creating when new) the data directory, or `memory://`, with the vector extension loaded. */
export function createPglite(dataDir: string, postgresqlconf?: string[]): Promise<PgliteInstance> {
  return PGlite.create(dataDir, {
    extensions: { vector },
    ...(postgresqlconf === undefined ? {} : { postgresqlconf }),
  });
}

/**
 * The installed versions of the pinned pair: a data directory made by one build opens only in the
 * same one (lib/db/pglite-template.ts). Read from their package.json, which neither exports.
 */
export async function pgliteVersions(): Promise<{ pglite: string; pgvector: string }> {
  const version = async (name: string) => {
    const entry = fileURLToPath(import.meta.resolve(name));
    const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}`.length);
    return (JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  };
  return { pglite: await version('@electric-sql/pglite'), pgvector: await version('@electric-sql/pglite-pgvector') };
}
