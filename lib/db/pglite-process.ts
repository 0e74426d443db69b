// The embedded database's own thread. PGlite runs PostgreSQL as WebAssembly, synchronously, on
// whatever thread calls it; on the walk's thread every statement would stall the model
// responses, timers and sockets waiting behind it (a cold walk's event loop was a quarter
// PGlite, up to a second at a time). Here it runs beside the walk instead, and
// lib/db/pglite.ts speaks to it in messages.
//
// Requests run strictly one after another in arrival order: PGlite is one session, and the
// caller's side keeps a transaction's statements together.

import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';

export type PgliteRequest =
  | { id: number; op: 'query'; sql: string; params: readonly unknown[]; blob?: string | Uint8Array }
  | { id: number; op: 'exec'; sql: string }
  | { id: number; op: 'close' };

export type PgliteReply =
  | { id: number; ok: true; rows: unknown[]; rowCount: number }
  | { id: number; ok: false; error: SerializedError };

/** A database error as fields, so that its SQLSTATE and detail survive the thread boundary. */
export interface SerializedError {
  name: string;
  message: string;
  fields: Record<string, unknown>;
}

export interface PgliteThreadData {
  dataDir: string;
}

const ERROR_FIELDS = ['code', 'detail', 'hint', 'severity', 'position', 'schema', 'table', 'column', 'constraint', 'where'] as const;

function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const key of ERROR_FIELDS) {
    const value = (error as unknown as Record<string, unknown>)[key];
    if (value !== undefined) fields[key] = value;
  }
  return { name: error.name, message: error.message, fields };
}

const port = parentPort!;
const { dataDir } = workerData as PgliteThreadData;

// PostgreSQL's default 128 MB of shared buffers would live in the WebAssembly heap, which never
// shrinks; the data files are in the OS page cache anyway, so a small pool costs no reads.
const POSTGRES_SETTINGS = ['shared_buffers=16MB'];

const pg = await PGlite.create(dataDir, { extensions: { vector }, postgresqlconf: POSTGRES_SETTINGS }).catch((error: unknown) => {
  port.postMessage({ ready: false, error: serializeError(error) });
  return null;
});
if (pg === null) port.close();
else port.postMessage({ ready: true });

async function run(db: PGlite, request: PgliteRequest): Promise<{ rows: unknown[]; rowCount: number }> {
  switch (request.op) {
    case 'query': {
      const options = request.blob === undefined ? undefined : { blob: new Blob([request.blob as string | Uint8Array<ArrayBuffer>]) };
      const result = await db.query(request.sql, request.params as unknown[], options);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    }
    case 'exec':
      await db.exec(request.sql);
      return { rows: [], rowCount: 0 };
    case 'close':
      await db.close();
      return { rows: [], rowCount: 0 };
  }
}

if (pg !== null) {
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (request: PgliteRequest) => {
    queue = queue.then(async () => {
      let reply: PgliteReply;
      try {
        reply = { id: request.id, ok: true, ...(await run(pg, request)) };
      } catch (error) {
        reply = { id: request.id, ok: false, error: serializeError(error) };
      }
      port.postMessage(reply);
      if (request.op === 'close') port.close();
    });
  });
}
