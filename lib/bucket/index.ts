// The durable corpus bucket (docs/behaviour/routes.md#post-walk): the authoritative copy of the
// corpus, of which ENGINE_SOURCE_PATH is a rebuildable working copy. INGEST_CORPUS_BUCKET
// names it: file:///dir (a directory, e.g. a mounted volume) or s3://bucket/prefix (any
// S3-compatible store). Keys are corpus-relative paths.

import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { CorpusBucket } from './bucket.ts';
import { fileBucket } from './file.ts';
import { s3Bucket } from './s3.ts';

/** The configured bucket, or null when the corpus directory is authoritative. */
export function openBucket(config: Pick<Config, 'corpusBucket' | 's3'>, log: Logger): CorpusBucket | null {
  if (config.corpusBucket === null) return null;
  const url = new URL(config.corpusBucket);
  return url.protocol === 's3:' ? s3Bucket(url, config.s3, log) : fileBucket(url, log);
}
