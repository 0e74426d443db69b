// Another corpus writer, held by the test itself: the writer fence of the engine under test
// (engine/walk/fence.ts), on PostgreSQL the lease row of the database the processes under test
// use, on PGlite the lease file in their state directory. A live holder that renews, as a second
// sidecar or CLI walk would be.

import { writerFence, type FenceHold } from '../../engine/walk/fence.ts';
import type { Database } from '../../lib/db/database.ts';
import { DEFAULT_LEASE_STALE_MS } from '../../lib/lease.ts';

export async function holdWriterFence(stateStorePath: string, db: Database): Promise<FenceHold> {
  const hold = await writerFence({ stateStorePath, fenceStaleMs: DEFAULT_LEASE_STALE_MS }, db).tryAcquire();
  if (hold === null) throw new Error('the writer fence is already held');
  return hold;
}
