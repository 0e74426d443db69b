// "Rows landed", the nightly lane's last step and the datapath monitor's question
// (docs/behaviour/events.md#datapath-monitor): did the walk's run end completed, stamped with the
// image it ran, and are its rows in the database? Read from pipeline_runs, the ledger, when the
// lane can reach the database (ENGINE_DB_DSN); from the walk-status answer otherwise (the embedded
// database lives inside the sidecar's process), which carries the same counts (engine/walk/tally.ts
// walkCounts) but neither the ledger row nor the rows themselves.
//
// What the lane calls landed, precisely:
//   - the run's row exists and its status is completed (a failed walk, fence_busy, abandoned or
//     a row still in progress is not);
//   - result.extractor_version is set (without it cross-reference checks fail hard:
//     docs/behaviour/versioning.md#extractor_version), and equals the lane's own IMAGE_SHA when
//     the lane has one;
//   - the walk saw items (counts.seen > 0): an idle walk (no corpus directory) lands nothing;
//   - at least one item is in the database (changed + unchanged > 0): a corpus whose every item
//     failed, or was dropped as of no known type, landed nothing;
//   - a walk that changed items wrote rows (the rows_<table> counts are not all zero);
//   - each table the run says it wrote, among those no later pass re-keys or collapses, holds
//     rows stamped with the run's op_id (docs/behaviour/tables.md#op_id-on-every-row); and when
//     nothing changed, the documents the unchanged items stand for are still there.
// Items that failed while others landed do not fail the lane: the walk tolerates them by design
// (docs/behaviour/stages.md#per-item-isolation) and the step's line says how many.

import type { Database } from '../../lib/db/database.ts';

/** Tables whose rows keep the op_id of the walk that wrote them (stage 5 re-keys and collapses entity rows). */
export const OP_STAMPED_TABLES = Object.freeze([
  'source_documents',
  'reference_items',
  'content_chunks',
  'q_a_extractions',
  'record_embeddings',
] as const);

export interface RunFacts {
  /** Where the facts were read: the ledger, or the walk-status answer. */
  source: 'pipeline_runs' | 'walk-status';
  /** pipeline_runs.status, or the walk-status state. */
  status: string;
  counts: Record<string, number>;
  /** From pipeline_runs only: result.extractor_version (null when the row lacks it). */
  extractorVersion?: string | null;
  /** The lane's IMAGE_SHA: the version the run must carry, when known. */
  expectedVersion?: string | null;
  /** From the database only: rows stamped with the run's op_id, per OP_STAMPED_TABLES table the run wrote. */
  rowsOfRun?: Record<string, number>;
  /** From the database only: documents (source_documents + reference_items) present at all. */
  documents?: number;
}

export interface Problem {
  code: string;
  message: string;
}

const n = (counts: Record<string, number>, key: string) => (Number.isFinite(counts[key]) ? counts[key]! : 0);

/** Everything that says the rows did not land; empty when they did. */
export function judgeRun(facts: RunFacts): Problem[] {
  const { counts } = facts;
  const problems: Problem[] = [];
  const add = (code: string, message: string) => problems.push({ code, message });
  if (facts.status !== 'completed') add('run_not_completed', `the run's status is ${facts.status}, not completed`);
  if (facts.source === 'pipeline_runs') {
    const version = facts.extractorVersion ?? null;
    if (version === null || version === '') {
      add(
        'extractor_version_missing',
        "the run's row has no result.extractor_version: the sidecar runs without IMAGE_SHA (docs/behaviour/versioning.md#extractor_version)",
      );
    } else if (facts.expectedVersion && version !== facts.expectedVersion) {
      add(
        'extractor_version_mismatch',
        `the run's extractor_version is ${version}, the lane's IMAGE_SHA ${facts.expectedVersion}: another image walked`,
      );
    }
  }
  const seen = n(counts, 'seen');
  const changed = n(counts, 'changed');
  const landed = changed + n(counts, 'unchanged');
  const written = Object.entries(counts)
    .filter(([k]) => k.startsWith('rows_') && k !== 'rows_deleted')
    .reduce((sum, [, v]) => sum + (Number.isFinite(v) ? v : 0), 0);
  if (seen === 0) {
    add(
      'nothing_walked',
      'the walk saw no item: the sidecar is idle (ENGINE_SOURCE_PATH unset or missing) or the corpus is empty',
    );
  } else if (landed === 0) {
    add(
      'no_item_landed',
      `none of the ${seen} items landed (${n(counts, 'failed')} failed, ${n(counts, 'dropped')} of no known type)`,
    );
  }
  if (changed > 0 && written === 0) add('no_rows_written', `${changed} items changed and the run wrote no row`);
  if (facts.rowsOfRun !== undefined) {
    for (const [table, rows] of Object.entries(facts.rowsOfRun)) {
      if (rows === 0) {
        add(
          'rows_missing',
          `the run wrote ${n(counts, `rows_${table}`)} ${table} rows and none carries its op_id in the database`,
        );
      }
    }
  }
  if (facts.documents !== undefined && landed > 0 && facts.documents === 0) {
    add('rows_missing', `${landed} items landed and the database holds no document row`);
  }
  return problems;
}

/** The run's pipeline_runs row, or null while it is not there. */
export async function readRunRow(
  db: Database,
  opId: string,
): Promise<{ status: string; extractorVersion: string | null; counts: Record<string, number> } | null> {
  const { rows } = await db.query<{ status: string; result: unknown }>(
    `SELECT status, result FROM pipeline_runs WHERE op_id = $1::uuid`,
    [opId],
  );
  const row = rows[0];
  if (row === undefined) return null;
  const result = (typeof row.result === 'string' ? JSON.parse(row.result) : row.result) as {
    extractor_version?: unknown;
    counts?: Record<string, number>;
  } | null;
  return {
    status: row.status,
    extractorVersion: typeof result?.extractor_version === 'string' ? result.extractor_version : null,
    counts: result?.counts ?? {},
  };
}

/** Rows carrying the op_id, in each OP_STAMPED_TABLES table the counts say the run wrote to. */
export async function rowsOfRun(
  db: Database,
  opId: string,
  counts: Record<string, number>,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of OP_STAMPED_TABLES) {
    if (!(n(counts, `rows_${table}`) > 0)) continue;
    // The table name comes from the constant above, never from the counts.
    const { rows } = await db.query<{ n: string | number }>(
      `SELECT count(*) AS n FROM ${table} WHERE op_id = $1::uuid`,
      [opId],
    );
    out[table] = Number(rows[0]?.n ?? 0);
  }
  return out;
}

/** Document rows of any walk (files and URLs). */
export async function documentCount(db: Database): Promise<number> {
  const { rows } = await db.query<{ n: string | number }>(
    `SELECT (SELECT count(*) FROM source_documents) + (SELECT count(*) FROM reference_items) AS n`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** "8 of 8 items landed (3 changed, 5 unchanged)", plus failures and rows written. */
export function describeCounts(counts: Record<string, number>): string {
  const landed = n(counts, 'changed') + n(counts, 'unchanged');
  const failed = n(counts, 'failed');
  const rows = Object.entries(counts)
    .filter(([k, v]) => k.startsWith('rows_') && k !== 'rows_deleted' && v > 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k.slice(5)} ${v}`);
  return (
    `${landed} of ${n(counts, 'seen')} items landed (${n(counts, 'changed')} changed, ${n(counts, 'unchanged')} unchanged` +
    `${failed > 0 ? `, ${failed} failed: see the walk's log` : ''})` +
    `; rows written: ${rows.length === 0 ? 'none' : rows.join(', ')}`
  );
}
