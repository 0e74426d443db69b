// `ingest walk [PATH] [--full-reprocess] [--json]`: one walk, then a summary.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { syncCorpus } from '../lib/bucket/pull-sync.ts';
import type { Config } from '../lib/config.ts';
import { tryAcquireFence } from '../engine/fence.ts';
import { openEngine } from '../engine/lifespan.ts';
import { walk, type WalkSummary } from '../engine/walk.ts';
import type { Logger } from '../lib/log.ts';
import { progressReporter } from './progress.ts';

export async function walkCommand(args: string[], { config, log }: { config: Config; log: Logger }): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'full-reprocess': { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length > 1) throw Object.assign(new TypeError('walk takes at most one PATH'), { code: 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' });
  const sourcePath = positionals[0] === undefined ? config.sourcePath : path.resolve(positionals[0]);
  // A corpus writer like the sidecar: one at a time on a state store (DESIGN.md 11).
  await mkdir(config.stateStorePath, { recursive: true });
  const fence = await tryAcquireFence(config.stateStorePath);
  if (fence === null) {
    process.stderr.write(`ingest: another corpus writer holds the writer fence in ${config.stateStorePath}; try again when its walk ends\n`);
    return 1;
  }
  try {
    return await walkInsideFence(config, log, sourcePath, values['full-reprocess'], values.json);
  } finally {
    await fence.release();
  }
}

async function walkInsideFence(config: Config, log: Logger, sourcePath: string | null, fullReprocess: boolean, json: boolean): Promise<number> {
  await syncCorpus(config, sourcePath, log);
  const engine = await openEngine(config, log);
  const progress = progressReporter(sourcePath, log);
  let summary: WalkSummary;
  try {
    summary = await walk(engine, { sourcePath, fullReprocess, onProgress: (p) => progress.update(p) });
  } finally {
    progress.stop();
    await engine.close();
  }
  process.stdout.write(json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary, engine.db.location));
  return summary.status === 'completed' ? 0 : 1;
}

export function formatSummary(s: WalkSummary, location: string): string {
  const lines = [
    `walk ${s.opId} ${s.status}${s.idle ? ' (idle: no corpus directory)' : ''} in ${(s.durationMs / 1000).toFixed(1)} s`,
    `items: ${s.items.seen} seen, ${s.items.changed} changed, ${s.items.unchanged} unchanged, ${s.items.failed} failed, ` +
      `${s.items.dropped} dropped (unrecognised type), ${s.items.skipped} skipped (unreadable), ${s.items.removed} removed`,
    `rows written: ${Object.entries(s.rows).map(([t, n]) => `${t} ${n}`).join(', ') || 'none'}; rows deleted: ${s.rowsDeleted}`,
    `database: ${location}; peak memory ${s.peakRssMb} MB`,
  ];
  if (s.error !== undefined) lines.push(`error: ${s.error}`);
  if (s.failures.length > 0) {
    lines.push('failed items:');
    for (const f of s.failures) lines.push(`  ${f.path}  [${f.stage}: ${f.code}] ${f.message}`);
    if (s.items.failed > s.failures.length) lines.push(`  ... and ${s.items.failed - s.failures.length} more`);
  }
  for (const p of s.passes.filter((p) => !p.ok)) lines.push(`pass ${p.name} failed: ${p.error}`);
  return `${lines.join('\n')}\n`;
}
