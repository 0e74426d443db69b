// What the ingest process (pglite.ts) and the embedded database's process (pglite-process.ts)
// say to each other over IPC, and the errors of ours that cross between them by name.

import { IngestError } from '../errors.ts';

export type PgliteRequest =
  | { id: number; op: 'query'; sql: string; params: readonly unknown[]; blob?: string | Uint8Array }
  | { id: number; op: 'exec'; sql: string }
  | { id: number; op: 'close' };

export type PgliteReply =
  { id: number; ok: true; rows: unknown[]; rowCount: number } | { id: number; ok: false; error: SerializedError };

export type PgliteReady = { ready: true } | { ready: false; error: SerializedError };

/** A database error as fields, so that its SQLSTATE and detail survive the process boundary. */
export interface SerializedError {
  name: string;
  message: string;
  fields: Record<string, unknown>;
}

export class DatabaseBusyError extends IngestError {
  constructor(dataDir: string, holder: string) {
    super(
      'database_busy',
      `the embedded database at ${dataDir} is open in another process (${holder}); stop that process ` +
        `(an ingest serve, walk or watch) or give each its own INGEST_DATA_DIR`,
    );
  }
}

/** The embedded database's process ended while statements were outstanding, or before it opened. */
export class EmbeddedDatabaseGoneError extends IngestError {
  constructor(dataDir: string, detail: string) {
    super('embedded_database_gone', `the embedded database at ${dataDir} is no longer running: ${detail}`);
  }
}
