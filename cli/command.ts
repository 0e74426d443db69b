// One entry of the `ingest` command table (cli/main.ts).

import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';

export type Run = (args: string[], context: { config: Config; log: Logger }) => Promise<number>;

export interface Command {
  usage: string;
  summary: string;
  /** The command fills the data directory's stores and so may create them (lib/data-dir.ts); others must find them. */
  createsDataDir?: true;
  run: Run;
}
