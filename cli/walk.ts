// `ingest walk [PATH] [--full-reprocess] [--read-scans] [--allow-mass-removal] [--rebind-corpus] [--json]`: one walk,
// then a summary.

import { parseArgs } from 'node:util';
import type { RunContext } from './command.ts';
import { writerFence } from '../engine/walk/fence.ts';
import { fencedCorpusWalk, type WalkFlags } from '../engine/trigger/fenced-walk.ts';
import { openLifespan, type Lifespan } from '../engine/lifespan.ts';
import { withTier1 } from './tier1.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import type { WalkProgress } from '../engine/walk/walk-options.ts';
import type { ProducerOutcome } from '../engine/producer/producer.ts';
import { warningText } from '../lib/runs/record.ts';
import { stderrLines } from '../lib/terminal.ts';
import { progressReporter, type ProgressReporter } from './progress.ts';
import { corpusDirectory } from './corpus-path.ts';
import { ownDataDirectories } from '../lib/corpus/own-data.ts';

export async function walkCommand(args: string[], { config, log, database }: RunContext): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      'full-reprocess': { type: 'boolean', default: false },
      'read-scans': { type: 'boolean', default: false },
      'allow-mass-removal': { type: 'boolean', default: false },
      'rebind-corpus': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  if (positionals.length > 1)
    throw Object.assign(new TypeError('walk takes at most one PATH'), { code: 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' });
  const sourcePath = corpusDirectory('walk', positionals[0], config);
  const lifespan = await withTier1(log, () => openLifespan(config, log, { opening: database?.take() }));
  const progress = progressReporter(sourcePath, log, ownDataDirectories(config));
  // Ctrl-C ends the walk at once, which loses nothing (engine/walk/walk.ts): say what it leaves.
  const interrupted = () => {
    progress.stop();
    stderrLines.print(interruptedLine(progress.latest));
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  let summary: WalkSummary | null;
  /** Where the fence is and who holds it, when the walk found it busy: asked before the database closes. */
  let busyFence = '';
  /** The producer runs the walk chained: their failure is said, and fails no walk. */
  let producerRuns: readonly ProducerOutcome[] = [];
  try {
    summary = await walkWithProgress(
      lifespan,
      sourcePath,
      {
        fullReprocess: values['full-reprocess'],
        readScans: values['read-scans'],
        allowMassRemoval: values['allow-mass-removal'],
        rebindCorpus: values['rebind-corpus'],
      },
      progress,
    );
    if (summary === null) busyFence = await writerFence(config, lifespan.db).describe();
    else producerRuns = await lifespan.producer.chainedAfter(summary.opId);
  } finally {
    await lifespan.close();
    process.off('SIGINT', interrupted);
  }
  if (summary === null) {
    process.stderr.write(
      `ingest: another corpus writer holds the writer fence ${busyFence}; try again when its walk ends\n`,
    );
    return 1;
  }
  const chained = producerRuns.map(({ opId, status, error, durationMs }) => ({ opId, status, error, durationMs }));
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ ...summary, producerRuns: chained }, null, 2)}\n`
      : formatSummary(summary, lifespan.db.location) + formatProducerRuns(chained),
  );
  if (summary.status !== 'completed') return 1;
  const undone = undoneBecause(summary);
  if (undone === null) return 0;
  process.stderr.write(`ingest: the walk completed without doing its job: ${undone} (exit ${EXIT_WALK_UNDONE})\n`);
  return EXIT_WALK_UNDONE;
}

/**
 * The exit code of a walk that completed without doing its job, distinct from a failed walk's 1,
 * so that a cron job does not read it as success (docs/OPERATIONS.md "Exit codes of the CLI").
 * Only the CLI's: the walk's status, its run record and what it chains stay those of a completed walk.
 */
export const EXIT_WALK_UNDONE = 3;

/**
 * Why a completed walk did not do its job, or null when it did: it saw nothing of a corpus it could
 * not list (no item, a folder unlisted: its root), or it kept the rows of documents it found gone.
 */
export function undoneBecause(s: WalkSummary): string | null {
  if (s.warnings.some((w) => w.name === 'mass_removal_refused'))
    return 'it refused to remove documents gone from the corpus (see the warning; --allow-mass-removal)';
  if (s.items.seen === 0 && s.warnings.some((w) => w.name === 'unlisted_directory'))
    return 'it could list nothing of the corpus (see the warning)';
  return null;
}

/** The fenced corpus walk, with a progress bar (or log lines) for the person waiting on it. */
export async function walkWithProgress(
  lifespan: Lifespan,
  sourcePath: string | null,
  flags: WalkFlags = {},
  progress: ProgressReporter = progressReporter(sourcePath, lifespan.log, ownDataDirectories(lifespan.config)),
): Promise<WalkSummary | null> {
  progress.start();
  try {
    return await fencedCorpusWalk(lifespan, sourcePath, { ...flags, onProgress: (p) => progress.update(p) });
  } finally {
    progress.stop();
  }
}

/** What a walk cut short by Ctrl-C leaves: its committed items stay, the next walk does the rest. */
export function interruptedLine({ items }: WalkProgress): string {
  return (
    `ingest walk interrupted: ${items.changed} changed items committed, ${items.unchanged} unchanged, ` +
    `${items.failed} failed, of ${items.seen} seen so far; the next walk redoes the rest\n`
  );
}

export function formatSummary(s: WalkSummary, location: string): string {
  const lines = [
    `walk ${s.opId} ${s.status}${s.idle ? ' (idle: no corpus directory)' : ''} in ${(s.durationMs / 1000).toFixed(1)} s`,
    `items: ${s.items.seen} seen, ${s.items.changed} changed, ${s.items.unchanged} unchanged, ${s.items.failed} failed, ` +
      `${s.items.dropped} dropped (unrecognised type), ${s.items.skipped} skipped ` +
      '(not walked: unreadable or special files, links broken or leading out of the corpus), ' +
      `${s.items.removed} removed${removedWords(s)}`,
    `rows written (upserts, rows already there included): ${
      Object.entries(s.rows)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ') || 'none'
    }; rows deleted: ${s.rowsDeleted}`,
    `database: ${location}; peak memory ${s.peakRssMb} MB`,
  ];
  if (s.ocr.pages > 0) lines.push(`ocr: ${s.ocr.pages} pages read in ${(s.ocr.ms / 1000).toFixed(1)} s`);
  if (s.error !== undefined) lines.push(`error: ${s.error}`);
  for (const w of s.warnings) lines.push(`warning ${warningText(w)}`);
  if (s.failures.length > 0) {
    lines.push('failed items:');
    for (const f of s.failures) lines.push(`  ${f.path}  [${f.stage}: ${f.code}] ${f.message}`);
    if (s.items.failed > s.failures.length) lines.push(`  ... and ${s.items.failed - s.failures.length} more`);
  }
  for (const p of s.passes.filter((p) => !p.ok)) lines.push(`pass ${p.name} failed: ${p.error}`);
  return `${lines.join('\n')}\n`;
}

/**
 * What became of the removed paths' rows: deleted with the documents no other file holds; a rename
 * or a move deletes none, as the document is still held where it went.
 */
function removedWords({ items, rowsDeleted }: WalkSummary): string {
  if (items.removed === 0) return '';
  return rowsDeleted > 0
    ? ' (gone from the corpus: the derived rows of documents no other file holds deleted, source_documents rows kept as provenance)'
    : ' (gone from these paths: no rows deleted, their documents are held by other files)';
}

/** The chained producer runs that failed, one line each: the walk's changes stay owed to the next. */
function formatProducerRuns(runs: readonly Pick<ProducerOutcome, 'opId' | 'status' | 'error'>[]): string {
  return runs
    .filter((r) => r.status === 'failed')
    .map((r) => `producer run ${r.opId} after this walk failed: ${r.error}; the next clean walk runs it again\n`)
    .join('');
}
