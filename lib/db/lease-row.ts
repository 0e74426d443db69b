// A named lease as a row of engine_leases (schema/0019_writer_lease.sql): the writer fence on
// PostgreSQL, shared by every process on the database whatever its data directory or host.
//
// The rules of the lease file (lib/lease.ts) where they fit: its holder renews it every quarter of
// `staleMs`, and one not renewed within `staleMs` is expired and taken over; a holder that died is
// taken over at once. Where they do not: every time is the database's now(), so the hosts' clocks
// never meet; and a dead pid is evidence only in the holder's own pid namespace of the same
// kernel boot (its "space"), not on a host of the same name: the database serves several hosts,
// and two containers may share a hostname (given one, or the host's network) while each has pids
// of its own. Elsewhere a killed holder's lease lasts until it expires. Each acquisition adds one to the row's token,
// and the row outlives its holders, so the token names one hold for ever: the fencing token that
// every transaction of the holder checks (check, lib/db/fenced.ts).

import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { isDatabaseUnavailable, type Database, type Queryable } from './database.ts';
import { FenceLostError, type WriteGuard } from './fenced.ts';
import { alive } from '../lease.ts';

/** This kernel boot and pid namespace (Linux), in which a pid names one process; null elsewhere. */
function pidSpace(): string | null {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()} ${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return null;
  }
}

const SPACE = pidSpace();

export interface LeaseRowOptions {
  name: string;
  staleMs: number;
  /** Who holds it, for the operator: this host and pid are added. */
  holder: string;
}

/**
 * Takes the lease when nobody holds it, its holder's expired, or its holder is a dead process of
 * this pid space: one statement each time, so of two takers exactly one wins. Returns null when
 * a live holder has it.
 */
export async function tryAcquireLeaseRow(db: Database, options: LeaseRowOptions): Promise<LeaseRowHold | null> {
  const taken = (await take(db, options, null)) ?? (await takeFromTheDead(db, options));
  return taken === null ? null : new LeaseRowHold(db, options, taken);
}

/** The new token, when the row was free or (deadToken) still carries the dead holder's token. */
async function take(db: Database, options: LeaseRowOptions, deadToken: string | null): Promise<string | null> {
  const holder = `${options.holder} (pid ${process.pid} on ${hostname()})`;
  const { rows } = await db.query<{ token: string }>(
    `INSERT INTO engine_leases AS l (name, token, holder, holder_pid, holder_space, acquired_at, renewed_at, expires_at)
       VALUES ($1, 1, $2, $3, $4, now(), now(), now() + $5 * interval '1 millisecond')
     ON CONFLICT (name) DO UPDATE
       SET token = l.token + 1, holder = EXCLUDED.holder, holder_pid = EXCLUDED.holder_pid,
           holder_space = EXCLUDED.holder_space, acquired_at = now(), renewed_at = now(),
           expires_at = EXCLUDED.expires_at
       WHERE l.expires_at <= now() OR l.token = $6::bigint
     RETURNING token::text AS token`,
    [options.name, holder, process.pid, SPACE, options.staleMs, deadToken],
  );
  return rows[0]?.token ?? null;
}

async function takeFromTheDead(db: Database, options: LeaseRowOptions): Promise<string | null> {
  if (SPACE === null) return null;
  const { rows } = await db.query<{ token: string; holder_pid: number | null; holder_space: string | null }>(
    'SELECT token::text AS token, holder_pid, holder_space FROM engine_leases WHERE name = $1',
    [options.name],
  );
  const row = rows[0];
  if (row === undefined || row.holder_space !== SPACE || row.holder_pid === null || alive(row.holder_pid)) return null;
  return take(db, options, row.token);
}

/** Who holds the lease now, or null when nobody does (no row, or an expired one). */
export async function leaseRowHolder(db: Database, name: string): Promise<string | null> {
  const { rows } = await db.query<{ holder: string }>(
    'SELECT holder FROM engine_leases WHERE name = $1 AND expires_at > now()',
    [name],
  );
  return rows[0]?.holder ?? null;
}

/**
 * Whether the lease still carries `token`, read FOR SHARE inside the writing transaction: a
 * takeover (which bumps the token) then waits for that transaction to commit.
 */
export async function carriesToken(tx: Queryable, name: string, token: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM engine_leases WHERE name = $1 AND token = $2 FOR SHARE', [
    name,
    token,
  ]);
  return rowCount > 0;
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
    if (!(await carriesToken(tx, this.#name, this.token))) throw this.#lose();
  }

  async release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#renewing;
    // Only our own hold: after a takeover the row is somebody else's. A release that cannot reach
    // the database is dropped, so the walk's own outcome stands: the lease expires by itself.
    await this.#db
      .query('UPDATE engine_leases SET expires_at = now() WHERE name = $1 AND token = $2', [this.#name, this.token])
      .catch((error: unknown) => {
        if (!isDatabaseUnavailable(error)) throw error;
      });
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
