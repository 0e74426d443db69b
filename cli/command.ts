// One entry of the `ingest` command table (cli/main.ts).

import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import type { EarlyDatabase } from './early-database.ts';

export interface RunContext {
  config: Config;
  log: Logger;
  /** The embedded database, being opened since the command started, for a command with `opensDatabaseFirst`. */
  database?: EarlyDatabase | null;
}

export type Run = (args: string[], context: RunContext) => Promise<number>;

export interface Command {
  usage: string;
  summary: string;
  /** The command fills the data directory's stores and so may create them (lib/data-dir.ts); others must find them. */
  createsDataDir?: true;
  /** Opening the database is the command's first act: runCommand starts it at once (cli/early-database.ts). */
  opensDatabaseFirst?: true;
  run: Run;
}
