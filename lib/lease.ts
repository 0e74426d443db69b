// A cross-process lease: a lock file created with O_EXCL, holding {pid, hostname, acquiredAt,
// renewedAt, token}. Its holder renews renewedAt every quarter of `staleMs`; a lease not renewed
// within `staleMs` is stale whoever wrote it, because neither a pid nor a hostname is evidence
// of life: a killed holder's pid may belong to another process by now (pids restart from 1 in
// a container), and a container's hostname changes when it is recreated. A lease of a dead
// process on this host is stale at once. A stale lease is taken over. The writer fence and the
// embedded database's lock are both leases.
//
// Clocks: renewedAt is the holder's clock, read against the reader's; hosts sharing a volume
// must agree on the time to well within `staleMs` (NTP does).

import { randomBytes } from 'node:crypto';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';

export const DEFAULT_LEASE_STALE_MS = 60_000;

export interface LeaseHold {
  release(): Promise<void>;
}

export interface Lease {
  pid: number;
  hostname: string;
  acquiredAt: string;
  /** Written by leases of earlier builds without it: acquiredAt stands in. */
  renewedAt?: string;
  token?: string;
  /** The process the holder works for, when the holder is a helper process (the embedded database's). */
  servesPid?: number;
}

export interface LeaseOptions {
  /** A lease not renewed for this long is stale; Infinity: only a dead pid on this host frees it. */
  staleMs?: number;
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

async function readLease(file: string): Promise<Lease | null> {
  return readFile(file, 'utf8').then(
    (text) => JSON.parse(text) as Lease,
    () => null,
  );
}

function isLive(lease: Lease, staleMs: number): boolean {
  if (lease.hostname === hostname() && !alive(lease.pid)) return false;
  const renewed = Date.parse(lease.renewedAt ?? lease.acquiredAt);
  return Number.isFinite(renewed) && Date.now() - renewed < staleMs;
}

/** Who holds the lease in `file`, or null when nobody does (none, or a stale one). */
export async function leaseHolder(file: string, staleMs = DEFAULT_LEASE_STALE_MS): Promise<Lease | null> {
  const holder = await readLease(file);
  return holder !== null && isLive(holder, staleMs) ? holder : null;
}

/** Takes the lease in `file`, or returns null when a live holder has it. */
export async function tryAcquireLease(file: string, options: LeaseOptions = {}): Promise<LeaseHold | null> {
  const staleMs = options.staleMs ?? DEFAULT_LEASE_STALE_MS;
  const now = new Date().toISOString();
  const lease: Lease = {
    pid: process.pid,
    hostname: hostname(),
    acquiredAt: now,
    renewedAt: now,
    token: randomBytes(12).toString('hex'),
    ...(options.servesPid === undefined ? {} : { servesPid: options.servesPid }),
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(file, JSON.stringify(lease), { flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if ((await leaseHolder(file, staleMs)) !== null) return null;
      await unlink(file).catch(() => {});
      continue;
    }
    // Two takers of one stale lease can both get here; the file says which of them won.
    if ((await readLease(file))?.token !== lease.token) return null;
    return holdLease(file, lease, staleMs);
  }
  return null;
}

function holdLease(file: string, lease: Lease, staleMs: number): LeaseHold {
  let renewing = Promise.resolve();
  if (!Number.isFinite(staleMs)) return { release: () => releaseLease(file, lease) };
  const renew = async () => {
    if ((await readLease(file))?.token !== lease.token) return;
    const temp = `${file}.${lease.token}.tmp`;
    await writeFile(temp, JSON.stringify({ ...lease, renewedAt: new Date().toISOString() }));
    await rename(temp, file);
  };
  const timer = setInterval(() => {
    renewing = renewing.then(renew).catch(() => {});
  }, staleMs / 4);
  // A lease never keeps its process alive.
  timer.unref();
  return {
    async release() {
      clearInterval(timer);
      await renewing;
      await releaseLease(file, lease);
    },
  };
}

/** Only our own lease: after a takeover the file is somebody else's. */
async function releaseLease(file: string, lease: Lease): Promise<void> {
  if ((await readLease(file))?.token === lease.token) await unlink(file).catch(() => {});
}
