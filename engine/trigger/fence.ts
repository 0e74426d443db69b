// The writer fence (docs/behaviour/states.md#writer-fence-and-single-flight): mutual exclusion of
// corpus writers across processes (the sidecar, watch mode, a CLI walk, a second container on the
// same volume). A lease file in the engine state directory, which every writer shares, renewed
// while held: a holder killed in any way frees it within `staleMs` (lib/lease.ts).

import path from 'node:path';
import { tryAcquireLease, type LeaseHold } from '../../lib/lease.ts';

export type FenceHold = LeaseHold;

/** Takes the fence, or returns null when another live writer holds it. */
export function tryAcquireFence(stateDir: string, staleMs: number): Promise<FenceHold | null> {
  return tryAcquireLease(path.join(stateDir, 'writer.fence'), { staleMs });
}
