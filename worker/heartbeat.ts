// The bid-worker's liveness (it has no HTTP server): its poll loop rewrites a small file at
// least once per interval, and the container's health check (`ingest worker health`) reads the
// file's age. A loop that stops cycling (a stalled event loop, a hang) stops the beats; a loop
// that is only waiting for an unreachable database keeps beating and says so in the state,
// because a restart would not bring the database back.

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface Beat {
  pid: number;
  workerId: string;
  at: string;
  state: 'polling' | 'database_unreachable' | 'stopping';
  running: number;
  done: number;
  failed: number;
}

export class Heartbeat {
  readonly #file: string;
  readonly #intervalMs: number;
  #last = 0;
  #writing: Promise<void> | null = null;

  constructor(file: string, intervalMs: number) {
    this.#file = file;
    this.#intervalMs = intervalMs;
  }

  /** Writes the beat when the last one is older than half the interval; never throws. */
  async beat(beat: Omit<Beat, 'pid' | 'at'>, force = false): Promise<void> {
    if (!force && (Date.now() - this.#last < this.#intervalMs / 2 || this.#writing !== null)) return;
    // One write at a time: two would share the temp file, and the older could land last.
    while (this.#writing !== null) await this.#writing;
    this.#last = Date.now();
    const body = JSON.stringify({ pid: process.pid, at: new Date().toISOString(), ...beat } satisfies Beat);
    const temp = `${this.#file}.${process.pid}.tmp`;
    this.#writing = mkdir(path.dirname(this.#file), { recursive: true })
      .then(() => writeFile(temp, body))
      .then(() => rename(temp, this.#file))
      .catch(() => {})
      .finally(() => (this.#writing = null));
    await this.#writing;
  }
}

/** The last beat and its age, or why there is none fit to trust. */
export async function readHeartbeat(
  file: string,
  maxAgeMs: number,
): Promise<{ ok: true; beat: Beat; ageMs: number } | { ok: false; reason: string }> {
  let beat: Beat;
  try {
    beat = JSON.parse(await readFile(file, 'utf8')) as Beat;
  } catch {
    return { ok: false, reason: `no heartbeat at ${file}` };
  }
  const ageMs = Date.now() - Date.parse(beat.at);
  if (!Number.isFinite(ageMs)) return { ok: false, reason: `the heartbeat at ${file} is unreadable` };
  if (ageMs > maxAgeMs) return { ok: false, reason: `the last heartbeat is ${Math.round(ageMs / 1000)} s old` };
  return { ok: true, beat, ageMs };
}
