// A corpus made by the real `ingest bench corpus` command: deterministic documents whose entity
// names and sentences recur across documents, as an organisation's do.

import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'ingest.ts');

/** Writes `docs` generated documents of `mix` into `dir`; throws with the command's stderr if it fails. */
export function generateCorpus(dir: string, docs: number, options: { mix: string; seed: number }): void {
  const made = spawnSync(
    process.execPath,
    [BIN, 'bench', 'corpus', '--docs', String(docs), '--mix', options.mix, '--seed', String(options.seed), dir],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`ingest bench corpus failed: ${made.stderr}`);
}
