// What a reliability test file walks: a generated corpus in a folder of its own, and tier 1 (the
// mock model server) as `ingest walk` starts it; made before the file's tests, gone after them.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'uvu';
import { generateCorpus } from './corpus.ts';
import { startMockTier, type MockTier } from './mock-tier.ts';

export interface CorpusAndTier {
  /** The file's scratch folder (the corpus is in it). */
  readonly root: string;
  readonly corpus: string;
  readonly tier: MockTier;
}

/** Registers the hooks on `test`; the fields are set once its tests run. */
export function corpusAndTier(
  test: Test,
  name: string,
  docs: number,
  options: Parameters<typeof generateCorpus>[2],
): CorpusAndTier {
  const made = {} as { root: string; corpus: string; tier: MockTier };
  test.before(async () => {
    made.root = mkdtempSync(path.join(tmpdir(), `ingest-${name}-`));
    made.corpus = path.join(made.root, 'corpus');
    generateCorpus(made.corpus, docs, options);
    made.tier = await startMockTier();
  });
  test.after(async () => {
    await made.tier.stop();
    rmSync(made.root, { recursive: true, force: true });
  });
  return made;
}
