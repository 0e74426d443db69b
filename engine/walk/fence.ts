// The writer fence (docs/behaviour/states.md#writer-fence-and-single-flight): mutual exclusion of
// corpus writers across processes (the sidecar, watch mode, a CLI walk, an admin merge, a second
// container). One interface over two leases, chosen by the engine:
// - PostgreSQL: a row of engine_leases in the database itself (lib/db/lease-row.ts), so processes
//   with different data directories, on different hosts, exclude each other; and every write of
//   the holder checks its fencing token (lib/db/fenced.ts), so a holder that lost the fence
//   writes nothing more.
// - PGlite: a lease file in the engine state directory (lib/lease.ts); one process owns the
//   embedded database anyway, and every writer of it shares that directory.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import { FencedDatabase, FenceLostError } from '../../lib/db/fenced.ts';
import { carriesToken, leaseRowHolder, tryAcquireLeaseRow } from '../../lib/db/lease-row.ts';
import { tryAcquireLease } from '../../lib/lease.ts';

export interface FenceHold {
  /** The database as the holder must write it: on PostgreSQL, every write checks the fencing token. */
  fenced(db: Database): Database;
  /** The fencing token (PostgreSQL): a distributed walk's workers write under it (fencedByToken). */
  readonly token: string | null;
  /** Set once the fence is known to be another writer's (PostgreSQL only). */
  readonly lost: FenceLostError | null;
  release(): Promise<void>;
}

export interface WriterFence {
  /** Takes the fence, or returns null when another live writer holds it. */
  tryAcquire(): Promise<FenceHold | null>;
  /** Where the fence is and, when it can tell, who holds it: for the message of a busy fence. */
  describe(): Promise<string>;
}

const LEASE_NAME = 'writer_fence';

/** The writer fence of `db`'s engine. */
export function writerFence(config: Pick<Config, 'stateStorePath' | 'fenceStaleMs'>, db: Database): WriterFence {
  return db.kind === 'postgres' ? rowFence(config, db) : fileFence(config);
}

/**
 * `db` as a process that works for a fence's holder must write it (a distributed walk's worker):
 * every write checks that the fence still carries the holder's token.
 */
export function fencedByToken(db: Database, token: string): Database {
  return new FencedDatabase(db, {
    async check(tx) {
      if (!(await carriesToken(tx, LEASE_NAME, token)))
        throw new FenceLostError(`the ${LEASE_NAME} lease no longer carries token ${token}`);
    },
  });
}

function rowFence({ stateStorePath, fenceStaleMs }: Pick<Config, 'stateStorePath' | 'fenceStaleMs'>, db: Database) {
  return {
    async tryAcquire(): Promise<FenceHold | null> {
      const hold = await tryAcquireLeaseRow(db, { name: LEASE_NAME, staleMs: fenceStaleMs, holder: stateStorePath });
      if (hold === null) return null;
      return {
        fenced: (target) => new FencedDatabase(target, hold),
        token: hold.token,
        get lost() {
          return hold.lost;
        },
        release: () => hold.release(),
      };
    },
    async describe(): Promise<string> {
      const holder = await leaseRowHolder(db, LEASE_NAME);
      return `in the database at ${db.location}${holder === null ? '' : ` (held by ${holder})`}`;
    },
  };
}

function fileFence({ stateStorePath, fenceStaleMs }: Pick<Config, 'stateStorePath' | 'fenceStaleMs'>) {
  return {
    async tryAcquire(): Promise<FenceHold | null> {
      await mkdir(stateStorePath, { recursive: true });
      const hold = await tryAcquireLease(path.join(stateStorePath, 'writer.fence'), { staleMs: fenceStaleMs });
      if (hold === null) return null;
      return { fenced: (target) => target, token: null, lost: null, release: () => hold.release() };
    },
    describe: async () => `in ${stateStorePath}`,
  };
}
