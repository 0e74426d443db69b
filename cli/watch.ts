// `ingest watch [PATH] [--quiet-ms N] [--reconcile-s N] [--verbose] [--rebind-corpus]`: a live corpus for
// development. An initial walk, then a walk per burst of saves (engine/trigger/watch.ts), each the same
// fenced, incremental walk as `ingest walk`. One line per walk that changed something; nothing
// when nothing changed. The walks' own log lines would bury those lines, so the log says only
// warnings and errors unless --verbose or INGEST_LOG_LEVEL asks for more. Ctrl-C stops after
// the walk in progress has committed; a second Ctrl-C stops at once (a killed walk loses
// nothing: the next one redoes what it had not committed).

import { parseArgs } from 'node:util';
import type { RunContext } from './command.ts';
import { warningText } from '../lib/runs/record.ts';
import { stderrLines } from '../lib/terminal.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { withTier1 } from './tier1.ts';
import { watchCorpus, type WatchedWalk } from '../engine/trigger/watch.ts';
import { formatSummary, walkWithProgress } from './walk.ts';
import { fencedCorpusWalk } from '../engine/trigger/fenced-walk.ts';
import { usageError } from './usage.ts';
import { corpusDirectory } from './corpus-path.ts';

const DEFAULT_QUIET_MS = 300;
const DEFAULT_RECONCILE_S = 60;

const clock = () => new Date().toTimeString().slice(0, 8);

/** The line a developer reads for one walk, or null when it changed nothing worth a line. */
export function watchLine(walked: WatchedWalk): string | null {
  const { summary, error, reason } = walked;
  if (error !== undefined) return `${clock()} walk failed: ${error.message}\n`;
  if (summary === null) return null;
  const { items } = summary;
  const touched = items.changed + items.removed + items.failed;
  if (touched === 0 && summary.status === 'completed' && reason !== 'initial') return null;
  const parts = [`${items.changed} changed`];
  if (items.removed > 0) parts.push(`${items.removed} removed`);
  if (items.failed > 0) parts.push(`${items.failed} failed`);
  if (reason === 'initial') parts.push(`${items.unchanged} unchanged`);
  const named =
    walked.namedCount === 0
      ? ''
      : ` (${walked.named.join(', ')}${walked.namedCount > walked.named.length ? `, +${walked.namedCount - walked.named.length}` : ''})`;
  const written = Object.values(summary.rows).reduce((a, b) => a + b, 0);
  const label =
    reason === 'initial' ? 'initial walk' : reason === 'reconcile' ? 'reconcile walk (missed changes)' : 'walk';
  const lines = [
    `${clock()} ${label}: ${parts.join(', ')}${named}; rows ${written} written, ${summary.rowsDeleted} deleted; ` +
      `${(summary.durationMs / 1000).toFixed(1)} s${summary.status === 'failed' ? `; FAILED: ${summary.error}` : ''}`,
  ];
  for (const f of summary.failures) lines.push(`  failed ${f.path} [${f.stage}: ${f.code}] ${f.message}`);
  for (const w of summary.warnings) lines.push(`  warning ${warningText(w)}`);
  return `${lines.join('\n')}\n`;
}

export async function watchCommand(args: string[], { config, log, database }: RunContext): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      'quiet-ms': { type: 'string', default: String(DEFAULT_QUIET_MS) },
      'reconcile-s': { type: 'string', default: String(DEFAULT_RECONCILE_S) },
      verbose: { type: 'boolean', default: false },
      'rebind-corpus': { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  if (positionals.length > 1) throw usageError('watch takes at most one PATH');
  const quietMs = Number(values['quiet-ms']);
  const reconcileS = Number(values['reconcile-s']);
  if (!Number.isInteger(quietMs) || quietMs < 10 || quietMs > 60_000)
    throw usageError('--quiet-ms must be a whole number from 10 to 60000');
  if (!(reconcileS >= 1 && reconcileS <= 86_400)) throw usageError('--reconcile-s must be from 1 to 86400');
  const sourcePath = corpusDirectory('watch', positionals[0], config);
  if (!config.log.levelSet) log.level = values.verbose ? 'info' : 'warn';

  // Opening the embedded database refuses, by name, a sidecar or walk that holds it.
  const lifespan = await withTier1(log, () => openLifespan(config, log, { opening: database?.take() }));
  // The first walk may be long (a whole corpus): it shows progress; the others print a line.
  let walks = 0;
  /** A failed initial walk stops the watch with that walk's exit: there is nothing to keep up to date. */
  let initialFailure: WatchedWalk | null = null;
  let stopWatching = () => {};
  try {
    const watch = await watchCorpus(
      { sourcePath, quietMs, maxDelayMs: 10 * quietMs, reconcileMs: reconcileS * 1000 },
      ({ deletionsSeen, feedUrls }) =>
        walks++ === 0
          ? walkWithProgress(lifespan, sourcePath, { rebindCorpus: values['rebind-corpus'], feedUrls })
          : fencedCorpusWalk(lifespan, sourcePath, { allowMassRemoval: deletionsSeen, feedUrls }),
      (walked) => {
        if (walked.reason === 'initial' && (walked.error !== undefined || walked.summary?.status === 'failed')) {
          initialFailure = walked;
          stopWatching();
          if (walked.summary != null) process.stdout.write(formatSummary(walked.summary, lifespan.db.location));
          return;
        }
        if (walked.reason === 'reconcile' && walked.summary !== null) {
          const { changed, removed } = walked.summary.items;
          if (changed + removed > 0)
            log.warn({ changed, removed }, 'watch: the reconcile walk found changes the file watcher had missed');
        }
        if (walked.summary === null && walked.error === undefined)
          log.info('watch: another writer holds the writer fence; walking again when it is free');
        const line = watchLine(walked);
        if (line !== null) process.stdout.write(line);
      },
      log,
    );
    // The initial walk's progress bar may be showing: every line to the terminal passes above it.
    stderrLines.print(`watching ${sourcePath} (Ctrl-C stops after the walk in progress)\n`);
    await new Promise<void>((resolve) => {
      stopWatching = resolve;
      if (initialFailure !== null) resolve();
      const stop = () => {
        stderrLines.print('stopping after the walk in progress commits (Ctrl-C again to stop now)\n');
        process.once('SIGINT', () => {
          stderrLines.clearStatus();
          stderrLines.print('stopped now; the next walk redoes what this one had not committed\n');
          process.exit(130);
        });
        resolve();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await watch.stop();
  } finally {
    await lifespan.close();
  }
  // As `ingest walk` ends: a walk that threw is the command's error; a failed one, its summary and exit 1.
  const failed = initialFailure as WatchedWalk | null;
  if (failed?.error !== undefined) throw failed.error;
  return failed === null ? 0 : 1;
}
