// The stores of the data directory (the embedded database, the state store) are created only by
// the commands that fill them: those marked createsDataDir in cli/main.ts's table
// (Config.mayCreateDataDir). Any other command run from another folder, or with another
// INGEST_DATA_DIR, would otherwise answer from a new, empty database as if the corpus held nothing; it fails instead, naming the
// directory it looked in (docs/DECISIONS.md).

import { existsSync } from 'node:fs';
import type { Config } from './config.ts';
import { IngestError } from './errors.ts';

export class DataDirectoryMissingError extends IngestError {
  readonly directory: string;
  constructor(directory: string, what: string) {
    super(
      'data_dir_missing',
      `no ${what} at ${directory}, and this command creates none. The data directory is INGEST_DATA_DIR ` +
        '(default: .ingest in the current folder): run the command from the folder where `ingest walk` ran, set ' +
        'INGEST_DATA_DIR (or ENGINE_DB_DSN) to where the data is, or walk a corpus first with `ingest walk PATH`',
    );
    this.directory = directory;
  }
}

/** Throws DataDirectoryMissingError when `directory` is missing and the command may not create it. */
export function requireStore(
  config: Partial<Pick<Config, 'mayCreateDataDir'>>,
  directory: string,
  what: 'embedded database' | 'engine state store',
): void {
  if (config.mayCreateDataDir === false && !existsSync(directory)) throw new DataDirectoryMissingError(directory, what);
}
