// Runs one resolved command: the configuration (a malformed one exits 2 before the command
// starts), the logger, and the exit code of what the command threw. Apart from cli/main.ts, so
// that `ingest --help` loads neither.

import { ConfigError, loadConfig, type Config } from '../lib/config.ts';
import { DataDirectoryMissingError } from '../lib/data-dir.ts';
import { codeOf } from '../lib/errors.ts';
import { createLogger, lineScrubber } from '../lib/log.ts';
import type { Command } from './command.ts';
import { EarlyDatabase } from './early-database.ts';

/** Codes of the errors that refuse a command for a reason outside it (docs/ERRORS.md). */
const REFUSALS: ReadonlySet<string> = new Set(['database_busy', 'listen_failed', 'embedding_model_changed']);

export async function runCommand(command: Command, args: string[]): Promise<number> {
  let config: Config;
  try {
    config = loadConfig(process.env, process.cwd(), { mayCreateDataDir: command.createsDataDir === true });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ingest: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const log = createLogger(config);
  const database = command.opensDatabaseFirst ? EarlyDatabase.start(config) : null;
  try {
    return await command.run(args, { config, log, database });
  } catch (error) {
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`ingest: ${error.message}\nusage: ${command.usage}\n`);
      return 2;
    }
    // Run from the wrong folder, or with the wrong INGEST_DATA_DIR: a configuration mistake.
    if (error instanceof DataDirectoryMissingError) {
      process.stderr.write(`ingest: ${error.message}\n`);
      return 2;
    }
    // A refusal's message says all there is to say, where and what to do: no stack, no log record.
    if (!REFUSALS.has(codeOf(error))) log.error({ err: error }, 'command failed');
    process.stderr.write(lineScrubber(config.secretValues)(`ingest: ${(error as Error).message}\n`));
    return 1;
  } finally {
    await database?.release();
  }
}
