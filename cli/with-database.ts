// The database for one read or write of a command that needs no lifespan (no walk, no models):
// opened from the configuration (or taken from the command's early opening, cli/early-database.ts),
// closed however the work ends.

import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openDatabase, type OpenOptions } from '../lib/db/open.ts';

export async function withDatabase<T>(
  config: Config,
  work: (db: Database) => Promise<T>,
  options: OpenOptions = {},
  opening?: Promise<Database>,
): Promise<T> {
  const db = await (opening ?? openDatabase(config, options));
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}
