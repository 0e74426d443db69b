// Where template_fill puts a job's result JSON and filled form: the directory
// INGEST_WORKER_OUTPUT_DIR when set; else, when a corpus bucket is set (workers on several
// machines share it), the bucket under INGEST_WORKER_OUTPUT_PREFIX, which pull-sync leaves out
// of the corpus; else INGEST_DATA_DIR/bid-worker-output. One folder per job id, so a job done
// again after a lost lease rewrites its own files and nobody else's.

import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CorpusBucket } from '../lib/bucket/bucket.ts';
import type { Config } from '../lib/config.ts';

export interface OutputLocation {
  /** Where `name` of the job's folder goes (a path or bucket URL), known before it is written. */
  locate(jobId: string, name: string): string;
  /** Stores `bytes` as `name` in the job's folder; resolves with where it went (locate's answer). */
  write(jobId: string, name: string, bytes: Uint8Array | string): Promise<string>;
}

export function outputLocation(
  config: Pick<Config, 'dataDir' | 'worker'>,
  bucket: CorpusBucket | null,
): OutputLocation {
  if (config.worker.outputDir === null && bucket !== null) return bucketOutput(bucket, config.worker.outputPrefix);
  return directoryOutput(config.worker.outputDir ?? path.join(config.dataDir, 'bid-worker-output'));
}

function directoryOutput(root: string): OutputLocation {
  const locate = (jobId: string, name: string) => path.join(root, jobId, name);
  return {
    locate,
    async write(jobId, name, bytes) {
      const target = locate(jobId, name);
      const dir = path.dirname(target);
      await mkdir(dir, { recursive: true });
      const temp = path.join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
      await writeFile(temp, bytes);
      await rename(temp, target);
      return target;
    },
  };
}

function bucketOutput(bucket: CorpusBucket, prefix: string): OutputLocation {
  const key = (jobId: string, name: string) => `${prefix}${jobId}/${name}`;
  return {
    locate: (jobId, name) => `${bucket.location.replace(/\/+$/, '')}/${key(jobId, name)}`,
    async write(jobId, name, bytes) {
      const dir = await mkdtemp(path.join(tmpdir(), 'ingest-output-'));
      try {
        const file = path.join(dir, name);
        await writeFile(file, bytes);
        await bucket.upload(key(jobId, name), file);
        return this.locate(jobId, name);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
