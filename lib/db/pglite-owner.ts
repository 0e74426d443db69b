// PGlite opens its files through Node as the ingest process's user, and one it may not write
// ends its WebAssembly in a bare "Aborted()" that names nothing. A data directory holding
// files of another user is what a container whose user changed leaves behind (a volume first
// written as root, then run as `node`), so the directory is checked before PGlite opens it.
// The check asks for ownership, not only write access: a root process could write the files,
// but what it creates would then be root's, and the directory's owner could no longer open it.

import { constants } from 'node:fs';
import { access, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

export class DataDirOwnershipError extends Error {
  readonly dataDir: string;
  constructor(dataDir: string, message: string) {
    super(`the embedded database directory ${dataDir} ${message}`);
    this.name = 'DataDirOwnershipError';
    this.dataDir = dataDir;
  }
}

interface Finding {
  /** Entries owned by another user, by owner uid: how many, and the first one met. */
  foreign: Map<number, { count: number; first: string }>;
  unwritable: { count: number; first: string | null };
}

async function inspect(dataDir: string, uid: number): Promise<Finding> {
  const finding: Finding = { foreign: new Map(), unwritable: { count: 0, first: null } };
  const entries = ['', ...(await readdir(dataDir, { recursive: true }))];
  for (const rel of entries) {
    const full = path.join(dataDir, rel);
    const stat = await lstat(full).catch(() => null);
    if (stat === null) continue; // gone since it was listed
    const shown = rel === '' ? 'the directory itself' : rel;
    if (stat.uid !== uid) {
      const owner = finding.foreign.get(stat.uid) ?? { count: 0, first: shown };
      owner.count += 1;
      finding.foreign.set(stat.uid, owner);
    } else if (
      !stat.isSymbolicLink() &&
      !(await access(full, constants.W_OK).then(
        () => true,
        () => false,
      ))
    ) {
      finding.unwritable.count += 1;
      finding.unwritable.first ??= shown;
    }
  }
  return finding;
}

const entries = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/**
 * Throws DataDirOwnershipError when the embedded database directory holds entries another user
 * owns, or entries of this user it cannot write. A directory not created yet passes.
 */
export async function checkDataDirOwnership(dataDir: string): Promise<void> {
  const uid = process.getuid?.();
  if (uid === undefined) return; // no POSIX owners to compare
  const exists = await lstat(dataDir).then(
    () => true,
    () => false,
  );
  if (!exists) return;
  const { foreign, unwritable } = await inspect(dataDir, uid);
  if (foreign.size > 0) {
    const owners = [...foreign].map(
      ([owner, { count, first }]) => `${entries(count)} owned by uid ${owner} (first: ${first})`,
    );
    const [usual] = [...foreign].sort((a, b) => b[1].count - a[1].count)[0]!;
    throw new DataDirOwnershipError(
      dataDir,
      `holds ${owners.join(', ')}, and this process runs as uid ${uid}: PGlite can open only files this user owns. ` +
        `Run ingest as uid ${usual} again (the user that wrote the directory: the container's user, e.g. docker run --user ${usual}), ` +
        `or give the directory to this user: chown -R ${uid} ${dataDir}`,
    );
  }
  if (unwritable.count > 0) {
    throw new DataDirOwnershipError(
      dataDir,
      `holds ${entries(unwritable.count)} this process (uid ${uid}) cannot write (first: ${unwritable.first}): ` +
        `make them writable (chmod -R u+w ${dataDir}), or mount the volume read-write`,
    );
  }
}
