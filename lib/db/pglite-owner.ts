// PGlite opens its files through Node as the ingest process's user, and one it may not write
// ends its WebAssembly in a bare "Aborted()" that names nothing. A data directory holding
// files of another user is what a container whose user changed leaves behind (a volume first
// written as root, then run as `node`), so the directory is checked before PGlite opens it.
// The check asks for ownership, not only write access: a root process could write the files,
// but what it creates would then be root's, and the directory's owner could no longer open it.

import { accessSync, constants, existsSync, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { IngestError } from '../errors.ts';

export class DataDirOwnershipError extends IngestError {
  readonly dataDir: string;
  constructor(dataDir: string, message: string) {
    super('data_dir_not_owned', `the embedded database directory ${dataDir} ${message}`);
    this.dataDir = dataDir;
  }
}

interface Finding {
  /** Entries owned by another user, by owner uid: how many, and the first one met. */
  foreign: Map<number, { count: number; first: string }>;
  unwritable: { count: number; first: string | null };
}

// Synchronous, once before the database process starts: a new database's 1,100 entries take
// 20-70 ms so on a busy two-core machine, where awaiting each call took about three times longer.
function inspect(dataDir: string, uid: number): Finding {
  const finding: Finding = { foreign: new Map(), unwritable: { count: 0, first: null } };
  for (const rel of ['', ...readdirSync(dataDir, { recursive: true, encoding: 'utf8' })]) {
    const full = path.join(dataDir, rel);
    const stat = lstatSync(full, { throwIfNoEntry: false });
    if (stat === undefined) continue; // gone since it was listed
    const shown = rel === '' ? 'the directory itself' : rel;
    if (stat.uid !== uid) {
      const owner = finding.foreign.get(stat.uid) ?? { count: 0, first: shown };
      owner.count += 1;
      finding.foreign.set(stat.uid, owner);
    } else if (!stat.isSymbolicLink() && !writable(full)) {
      finding.unwritable.count += 1;
      finding.unwritable.first ??= shown;
    }
  }
  return finding;
}

function writable(file: string): boolean {
  try {
    accessSync(file, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

const entries = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/**
 * Throws DataDirOwnershipError when the embedded database directory holds entries another user
 * owns, or entries of this user it cannot write. A directory not created yet passes.
 */
export function checkDataDirOwnership(dataDir: string): void {
  const uid = process.getuid?.();
  if (uid === undefined || !existsSync(dataDir)) return; // no POSIX owners to compare, or nothing yet
  const { foreign, unwritable } = inspect(dataDir, uid);
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
