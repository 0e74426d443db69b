// The writer fence (SPEC.md 4 rule 1, DESIGN.md 11): mutual exclusion of corpus writers across
// processes (the sidecar, watch mode, a second container on the same volume). A lock file in
// the engine state directory, created with O_EXCL and holding {pid, hostname, acquiredAt}.
// A lock left by a dead process on this host is taken over; one held by a live process, or
// by another host (whose liveness we cannot see), means busy.

import { readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';

const FENCE_FILE = 'writer.fence';

export interface FenceHold {
  release(): Promise<void>;
}

interface Lease {
  pid: number;
  hostname: string;
  acquiredAt: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the fence, or returns null when another live writer holds it. */
export async function tryAcquireFence(dir: string): Promise<FenceHold | null> {
  const file = path.join(dir, FENCE_FILE);
  const lease: Lease = { pid: process.pid, hostname: hostname(), acquiredAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(file, JSON.stringify(lease), { flag: 'wx' });
      return {
        async release() {
          await unlink(file).catch(() => {});
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readFile(file, 'utf8').then((t) => JSON.parse(t) as Lease, () => null);
      const stale = holder === null || (holder.hostname === lease.hostname && !alive(holder.pid));
      if (!stale) return null;
      await unlink(file).catch(() => {});
    }
  }
  return null;
}
