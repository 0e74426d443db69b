// The corpus directory `ingest walk` and `ingest watch` are given. On the command line a
// mistyped path is a mistake to say, not idle mode (the sidecar's answer to an unset or missing
// ENGINE_SOURCE_PATH, docs/behaviour/stages.md#idle-mode): a path that is not a directory, or
// neither a PATH nor ENGINE_SOURCE_PATH, exits 2 before anything is opened or created
// (docs/DECISIONS.md).

import { statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../lib/config.ts';
import { usageError } from './usage.ts';

export function corpusDirectory(
  command: 'walk' | 'watch' | 'prefill',
  positional: string | undefined,
  config: Pick<Config, 'sourcePath' | 'corpusBucket'>,
): string {
  if (positional === undefined && config.sourcePath === null)
    throw usageError(`${command} needs a corpus directory: give a PATH or set ENGINE_SOURCE_PATH`);
  const directory = positional === undefined ? config.sourcePath! : path.resolve(positional);
  const named = positional === undefined ? `ENGINE_SOURCE_PATH ${directory}` : directory;
  let stats;
  try {
    stats = statSync(directory);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // With a corpus bucket the walk's pull-sync creates the directory.
    if (code === 'ENOENT' && config.corpusBucket !== null) return directory;
    throw usageError(
      code === 'ENOENT' ? `${named} does not exist` : `${named} cannot be read (${code ?? (error as Error).message})`,
    );
  }
  if (!stats.isDirectory()) throw usageError(`${named} is not a directory`);
  return directory;
}
