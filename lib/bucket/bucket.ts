// What every corpus bucket is, whatever stores it (index.ts opens the configured one).

import { IngestError } from '../errors.ts';

export interface BucketObject {
  key: string;
  /** Changes whenever the object's bytes may have changed (an ETag, or size and mtime). */
  version: string;
  size: number;
}

export interface CorpusBucket {
  /** Printable, without credentials. */
  readonly location: string;
  list(): AsyncIterable<BucketObject>;
  /** Writes the object's bytes to the file `to` (created or replaced). */
  download(key: string, to: string): Promise<void>;
  /** Stores the bytes of the file `from` under `key`; resolves with the object's new version. */
  upload(key: string, from: string): Promise<string>;
  /** Deletes the object under `key`; one that is not there is no error. */
  remove(key: string): Promise<void>;
  /** Releases the connections it holds. */
  close(): void;
}

export class BucketError extends IngestError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('bucket_failed', message, options);
  }
}
