// `ingest db migrate`: applies the reference platform schema and says where the database lives.

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { migrate } from '../lib/db/migrate.ts';
import type { Logger } from '../lib/log.ts';

export async function dbMigrateCommand(
  args: string[],
  { config, log }: { config: Config; log: Logger },
): Promise<number> {
  parseArgs({ args, options: {}, allowPositionals: false });
  const db = await openDatabase(config, { bootstrap: false, uses: [], unboundedStatements: true });
  try {
    const report = await migrate(db);
    for (const m of report.applied) log.info({ version: m.version, name: m.name }, 'migration applied');
    process.stdout.write(
      `database: ${db.kind} at ${db.location}\n` +
        `migrations: ${report.applied.length} applied now, ${report.alreadyApplied} already applied\n`,
    );
    return 0;
  } finally {
    await db.close();
  }
}
