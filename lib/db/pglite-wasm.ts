// PGlite (PostgreSQL as WebAssembly) with the pgvector extension: the one module that imports
// either package, so a bump of their pinned pair stays here
// (docs/behaviour/versioning.md#dependency-pins).

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
