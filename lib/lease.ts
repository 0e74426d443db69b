// A cross-process lease: a lock file created with O_EXCL and holding {pid, hostname,
// acquiredAt}. A lease left by a dead process on this host is taken over; one held by a live
// process, or by another host (whose liveness we cannot see), is busy. The writer fence and
// the embedded database's lock are both leases.

import { readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';

export interface LeaseHold {
  release(): Promise<void>;
}

export interface Lease {
  pid: number;
  hostname: string;
  acquiredAt: string;
  /** The process the holder works for, when the holder is a helper process (the embedded database's). */
  servesPid?: number;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Who holds the lease in `file`, or null when nobody (or nobody alive on this host) does. */
export async function leaseHolder(file: string): Promise<Lease | null> {
  const holder = await readFile(file, 'utf8').then(
    (t) => JSON.parse(t) as Lease,
    () => null,
  );
  if (holder === null || (holder.hostname === hostname() && !alive(holder.pid))) return null;
  return holder;
}

/** Takes the lease in `file`, or returns null when another live process holds it. */
export async function tryAcquireLease(file: string, servesPid?: number): Promise<LeaseHold | null> {
  const lease: Lease = { pid: process.pid, hostname: hostname(), acquiredAt: new Date().toISOString(), servesPid };
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
      if ((await leaseHolder(file)) !== null) return null;
      await unlink(file).catch(() => {});
    }
  }
  return null;
}
