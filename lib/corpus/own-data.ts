// The directories the service writes its own data to. A corpus may hold one (INGEST_DATA_DIR
// set to a folder of the corpus, say): it is never walked as documents, and pull-sync never
// deletes in it, whatever its name (lib/corpus/files.ts: the `exclude` option).

import type { Config } from '../config.ts';

export function ownDataDirectories(
  config: Pick<Config, 'dataDir' | 'database' | 'stateStorePath' | 'bundle' | 'worker'>,
): string[] {
  const dirs = [config.dataDir, config.database.embeddedDir, config.stateStorePath, config.bundle.dir];
  return config.worker.outputDir === null ? dirs : [...dirs, config.worker.outputDir];
}
