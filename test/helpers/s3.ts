// A real S3-compatible server on loopback (s3rver, files in a temp directory) and a client for
// it, so bucket code is tested against the S3 protocol as the AWS SDK speaks it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  put(key: string, body: string | Uint8Array): Promise<void>;
  get(key: string): Promise<string | null>;
  remove(key: string): Promise<void>;
  /** The environment that points the service at this server. */
  env(prefix: string): Record<string, string>;
  close(): Promise<void>;
}

// The SDK's default credential chain reads these; s3rver accepts exactly this pair.
process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';

export async function startTestS3(bucket = 'corpus'): Promise<TestS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 'ingest-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    endpoint,
    bucket,
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    async get(key) {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key })).catch(() => null);
      return object === null ? null : object.Body!.transformToString();
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    env: (prefix) => ({
      INGEST_CORPUS_BUCKET: `s3://${bucket}/${prefix}`,
      INGEST_S3_ENDPOINT: endpoint,
      INGEST_S3_FORCE_PATH_STYLE: 'true',
    }),
    async close() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
