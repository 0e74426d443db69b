// `ingest state verify` and `ingest state reset`: the two ways out of a state store this build
// refuses (a format-version mismatch) or one an operator no longer trusts.

import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { DatabaseStateStore } from '../lib/state/database-store.ts';
import { inspectStateStore, resetStateStore } from '../lib/state/store.ts';

export async function stateVerifyCommand(args: string[], { config }: { config: Config }): Promise<number> {
  parseArgs({ args, options: {} });
  if (config.stateStore === 'database') return verifyDatabaseStore(config);
  if (!existsSync(storeFile(config))) return nothingThere(config, 'to verify');
  const report = await inspectStateStore(config.stateStorePath);
  const problems: string[] = [];
  if (report.formatVersion !== report.expectedFormatVersion) {
    problems.push(`format version ${String(report.formatVersion)}, this build needs ${report.expectedFormatVersion}`);
  }
  if (report.invalidItems > 0)
    problems.push(`${report.invalidItems} unreadable item memos (the next walk re-runs those items)`);
  process.stdout.write(
    `state store: ${report.path}\n` +
      `format version: ${String(report.formatVersion)} (expected ${report.expectedFormatVersion})\n` +
      `item memos: ${report.items}\ninner memos: ${report.memos}\n` +
      `bound to database: ${report.boundDatabaseId ?? 'none yet'}\n` +
      `bound to corpus: ${report.boundCorpusRoot ?? 'none yet'}\n` +
      (problems.length === 0 ? 'ok\n' : `problems:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`),
  );
  return report.formatVersion === report.expectedFormatVersion ? 0 : 1;
}

export async function stateResetCommand(args: string[], { config }: { config: Config }): Promise<number> {
  const { values } = parseArgs({ args, options: { yes: { type: 'boolean', default: false } } });
  if (!values.yes) {
    const where = config.stateStore === 'database' ? `in ${describe(config)}` : `at ${config.stateStorePath}`;
    process.stderr.write(
      `ingest: this deletes the engine state store ${where}; the next walk re-extracts every item ` +
        '(model calls included). Run again with --yes to proceed.\n',
    );
    return 2;
  }
  if (config.stateStore === 'database') {
    const reset = await withDatabaseStore(config, async (store) => {
      const bound = (await store.boundDatabaseId()) ?? (await store.boundCorpusRoot());
      if ((await store.itemCount()) + (await store.memoCount()) === 0 && bound === undefined) return false;
      await store.reset();
      return true;
    });
    if (!reset) {
      process.stderr.write(`ingest: the state store in ${describe(config)} is empty: nothing to reset\n`);
      return 2;
    }
    process.stdout.write(`state store in ${describe(config)} reset\n`);
    return 0;
  }
  if (!existsSync(storeFile(config))) return nothingThere(config, 'to reset');
  await resetStateStore(config.stateStorePath);
  process.stdout.write(`state store at ${config.stateStorePath} reset\n`);
  return 0;
}

const storeFile = (config: Config) => path.join(config.stateStorePath, 'state.mdb');

/** A command with no state store to act on did not do what it was asked: exit 2, as for a missing data directory. */
function nothingThere(config: Config, what: string): number {
  process.stderr.write(
    `ingest: no state store at ${config.stateStorePath}, nothing ${what} (the next walk creates one)\n`,
  );
  return 2;
}

const describe = (config: Config) => (config.database.dsn === null ? 'the embedded database' : 'the database');

async function withDatabaseStore<T>(config: Config, use: (store: DatabaseStateStore) => Promise<T>): Promise<T> {
  const db = await openDatabase(config);
  try {
    return await use(new DatabaseStateStore(db));
  } finally {
    await db.close();
  }
}

/** The store in the database has no format of its own to check (the schema's migrations are its format). */
async function verifyDatabaseStore(config: Config): Promise<number> {
  const report = await withDatabaseStore(config, async (store) => ({
    items: await store.itemCount(),
    memos: await store.memoCount(),
    database: await store.boundDatabaseId(),
    corpus: await store.boundCorpusRoot(),
  }));
  process.stdout.write(
    `state store: ${describe(config)} (INGEST_STATE_STORE=database)\n` +
      `item memos: ${report.items}\ninner memos: ${report.memos}\n` +
      `bound to database: ${report.database ?? 'none yet'}\n` +
      `bound to corpus: ${report.corpus ?? 'none yet'}\nok\n`,
  );
  return 0;
}
