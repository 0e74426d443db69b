// The pipeline_runs record of one walk (docs/behaviour/states.md#pipeline_runs-row,
// docs/behaviour/events.md#pipeline-run-webhook): created in_progress at flow start, updated to its
// terminal status at flow end, one row per invocation. Without a web app configured the service
// writes the row itself.

import type { Database } from '../db/database.ts';
import type { RunCounters } from '../run-context.ts';

/** Something the operator must hear about although the run completed (a refused mass removal, an unlisted folder). */
export interface RunWarning {
  name: string;
  message: string;
  /** The item it concerns (its corpus-relative path), for a warning about one document. */
  path?: string;
}

/** A warning as one line for people: its name, the item it concerns, what it says. */
export const warningText = (w: RunWarning): string =>
  `${w.name}${w.path === undefined ? '' : ` ${w.path}`}: ${w.message}`;

export interface RunRecord {
  opId: string;
  /** pipeline_runs.flow: a walk unless said otherwise; the producer's runs are 'producer'. */
  flow?: 'walk' | 'producer';
  /**
   * fence_busy: the invocation found the writer fence held and made no pass. abandoned: the
   * walk's process ended before the walk did (killed, crashed); its row is closed by the next walk.
   */
  status: 'in_progress' | 'completed' | 'failed' | 'fence_busy' | 'abandoned';
  startedAt: string;
  finishedAt: string | null;
  result: {
    /** IMAGE_SHA; absent when the sidecar was started without it. */
    extractor_version?: string;
    counts: Record<string, number>;
    counters: RunCounters;
    /** Named warnings of a walk that completed (a refused mass removal). */
    warnings?: RunWarning[];
    error?: string;
  };
}

/**
 * Emits the run's start and end. Neither call ever throws: a run record never fails a walk.
 * `finish` resolves to false when the record could not be delivered and is worth sending again
 * (the database or the web app unreachable), true once it landed or was refused for good.
 */
export interface RunRecorder {
  start(record: RunRecord): Promise<void>;
  finish(record: RunRecord): Promise<boolean>;
}

/** Writes pipeline_runs directly: INSERT at start, UPDATE of the same row (keyed by op_id) at the end. */
export function databaseRunRecorder(db: Database, onError: (phase: string, error: unknown) => void): RunRecorder {
  return {
    async start(record) {
      try {
        await db.query(
          `INSERT INTO pipeline_runs (id, op_id, flow, status, started_at, result)
           VALUES ($1, $1, $5, $2, $3, $4::jsonb)
           ON CONFLICT (op_id) DO NOTHING`,
          [record.opId, record.status, record.startedAt, JSON.stringify(record.result), record.flow ?? 'walk'],
        );
      } catch (error) {
        onError('start', error);
      }
    },
    async finish(record) {
      try {
        // An upsert, so a run whose start row could not be written still leaves its outcome.
        await db.query(
          `INSERT INTO pipeline_runs (id, op_id, flow, status, started_at, finished_at, result)
           VALUES ($1, $1, $6, $2, $3, $4, $5::jsonb)
           ON CONFLICT (op_id) DO UPDATE SET status = EXCLUDED.status, finished_at = EXCLUDED.finished_at, result = EXCLUDED.result`,
          [
            record.opId,
            record.status,
            record.startedAt,
            record.finishedAt,
            JSON.stringify(record.result),
            record.flow ?? 'walk',
          ],
        );
        return true;
      } catch (error) {
        onError('finish', error);
        return false;
      }
    },
  };
}
