// One prefill at a time per state store: a second one beside it would find the first's batches
// neither recorded in full nor stored yet, and buy their answers again. The lease is the writer
// fence's kind (engine/walk/fence.ts) under its own name, since a prefill writes no row and
// must not keep walks out: a row of engine_leases where the store lives in the database, a lease
// file beside the lmdb store otherwise.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import { leaseRowHolder, tryAcquireLeaseRow } from '../../lib/db/lease-row.ts';
import { IngestError } from '../../lib/errors.ts';
import { tryAcquireLease, type LeaseHold } from '../../lib/lease.ts';

const LEASE_NAME = 'prefill';

export class PrefillBusyError extends IngestError {
  constructor(where: string) {
    super('prefill_busy', `another ingest prefill is running on this state store (${where}); try again when it ends`);
  }
}

/** Takes the prefill's lease for as long as it runs; PrefillBusyError when another prefill holds it. */
export async function holdPrefillLease(
  config: Pick<Config, 'stateStorePath' | 'fenceStaleMs'>,
  db: Database | null,
): Promise<LeaseHold> {
  if (db !== null) {
    const hold = await tryAcquireLeaseRow(db, {
      name: LEASE_NAME,
      staleMs: config.fenceStaleMs,
      holder: 'ingest prefill',
    });
    if (hold !== null) return hold;
    const holder = await leaseRowHolder(db, LEASE_NAME);
    throw new PrefillBusyError(`in the database at ${db.location}${holder === null ? '' : `, held by ${holder}`}`);
  }
  await mkdir(config.stateStorePath, { recursive: true });
  const file = path.join(config.stateStorePath, 'prefill.lease');
  const hold = await tryAcquireLease(file, { staleMs: config.fenceStaleMs });
  if (hold === null) throw new PrefillBusyError(`lease file ${file}`);
  return hold;
}
