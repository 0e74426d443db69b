// A full disk under the state store or the database, or a state store that cannot commit at all
// (docs/OPERATIONS.md "When the disk is full"). Every item after it would fail the same way, so
// the walk stops, as it does for a database gone: nothing it did not commit is memoised, and once
// there is space the next walk redoes exactly that.

import { IngestError } from './errors.ts';

/** SQLSTATE disk_full, from PostgreSQL and from the embedded database. */
const DISK_FULL_SQLSTATE = '53100';
/** ENOSPC as lmdb reports it: the errno as a number. */
const ENOSPC_ERRNO = 28;

/** True when the error, or one it was caused by, says a disk is full or the state store cannot write. */
export function isStorageFull(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof StorageFullError || e instanceof StateStoreWriteError) return true;
    const code = (e as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === DISK_FULL_SQLSTATE || code === ENOSPC_ERRNO) return true;
    if (/No space left on device/.test(e.message)) return true;
  }
  return false;
}

/** What stops the walk for `error` (isStorageFull): the state store's own error, or a full disk. */
export function storageStop(error: unknown): IngestError {
  for (let e: unknown = error; e instanceof Error; e = e.cause)
    if (e instanceof StorageFullError || e instanceof StateStoreWriteError) return e;
  return new StorageFullError(error);
}

export class StorageFullError extends IngestError {
  constructor(cause: unknown) {
    super(
      'disk_full',
      `a disk is full (${(cause as Error).message}); the walk stopped, and once there is space the next walk ` +
        'redoes what this one had not committed',
      { cause },
    );
  }
}

/**
 * The state store could not commit for another reason than a full disk (lmdb on a full tmpfs
 * sees EIO, as it would on a failing disk): the walk stops the same way.
 */
export class StateStoreWriteError extends IngestError {
  constructor(cause: unknown) {
    super(
      'state_store_write_failed',
      `the state store could not commit a write (${(cause as Error).message}); the walk stopped, and the next ` +
        'walk redoes what this one had not committed',
      { cause },
    );
  }
}
