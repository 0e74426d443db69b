// A named lease as a row of engine_leases (schema/0019_writer_lease.sql): the writer fence on
// PostgreSQL, shared by every process on the database whatever its data directory or host.
//
// The rules of the lease file (lib/lease.ts) where they fit: its holder renews it every quarter of
// `staleMs`, and one not renewed within `staleMs` is expired and taken over. Where they do not:
// every time is the database's now(), so the hosts' clocks never meet, and a dead pid is no
// evidence here, since the database serves several hosts and two of them may share a hostname
// (a killed holder's lease lasts until it expires). Each acquisition adds one to the row's token,
// and the row outlives its holders, so the token names one hold for ever: the fencing token that
// every transaction of the holder checks (check, lib/db/fenced.ts).

import { hostname } from 'node:os';
import type { Database, Queryable } from './database.ts';
import { FenceLostError, type WriteGuard } from './fenced.ts';

export interface LeaseRowOptions {
  name: string;
  staleMs: number;
  /** Who holds it, for the operator: this host and pid are added. */
  holder: string;
}

/**
 * Takes the lease when nobody holds it or its holder's expired: one statement, so of two takers
 * exactly one wins. Returns null when a live holder has it.
 */
export async function tryAcquireLeaseRow(db: Database, options: LeaseRowOptions): Promise<LeaseRowHold | null> {
  const holder = `${options.holder} (pid ${process.pid} on ${hostname()})`;
  const { rows } = await db.query<{ token: string }>(
    `INSERT INTO engine_leases AS l (name, token, holder, acquired_at, renewed_at, expires_at)
       VALUES ($1, 1, $2, now(), now(), now() + $3 * interval '1 millisecond')
     ON CONFLICT (name) DO UPDATE
       SET token = l.token + 1, holder = EXCLUDED.holder, acquired_at = now(), renewed_at = now(),
           expires_at = EXCLUDED.expires_at
       WHERE l.expires_at <= now()
     RETURNING token::text AS token`,
    [options.name, holder, options.staleMs],
  );
  return rows.length === 0 ? null : new LeaseRowHold(db, options, rows[0]!.token);
}

/** Who holds the lease now, or null when nobody does (no row, or an expired one). */
export async function leaseRowHolder(db: Database, name: string): Promise<string | null> {
  const { rows } = await db.query<{ holder: string }>(
    'SELECT holder FROM engine_leases WHERE name = $1 AND expires_at > now()',
    [name],
  );
  return rows[0]?.holder ?? null;
}

export class LeaseRowHold implements WriteGuard {
  readonly token: string;
  readonly #db: Database;
  readonly #name: string;
  readonly #staleMs: number;
  readonly #timer: NodeJS.Timeout;
  #renewing: Promise<void> = Promise.resolve();
  #lost: FenceLostError | null = null;

  constructor(db: Database, { name, staleMs }: LeaseRowOptions, token: string) {
    this.#db = db;
    this.#name = name;
    this.#staleMs = staleMs;
    this.token = token;
    // A renewal that cannot reach the database is tried again at the next tick: while nobody
    // took the lease over, its token is still good, however late.
    this.#timer = setInterval(() => {
      this.#renewing = this.#renewing.then(() => this.#renew()).catch(() => {});
    }, staleMs / 4);
    // A lease never keeps its process alive.
    this.#timer.unref();
  }

  /** Set once the lease is known to be another holder's: a renewal or a check found another token. */
  get lost(): FenceLostError | null {
    return this.#lost;
  }

  async check(tx: Queryable): Promise<void> {
    const { rowCount } = await tx.query('SELECT 1 FROM engine_leases WHERE name = $1 AND token = $2 FOR SHARE', [
      this.#name,
      this.token,
    ]);
    if (rowCount === 0) throw this.#lose();
  }

  async release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#renewing;
    // Only our own hold: after a takeover the row is somebody else's.
    await this.#db.query('UPDATE engine_leases SET expires_at = now() WHERE name = $1 AND token = $2', [
      this.#name,
      this.token,
    ]);
  }

  async #renew(): Promise<void> {
    const { rowCount } = await this.#db.query(
      `UPDATE engine_leases SET renewed_at = now(), expires_at = now() + $3 * interval '1 millisecond'
        WHERE name = $1 AND token = $2`,
      [this.#name, this.token, this.#staleMs],
    );
    if (rowCount === 0) {
      clearInterval(this.#timer);
      this.#lose();
    }
  }

  #lose(): FenceLostError {
    this.#lost ??= new FenceLostError(`the ${this.#name} lease no longer carries token ${this.token}`);
    return this.#lost;
  }
}
