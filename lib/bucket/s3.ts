// A corpus bucket on S3 or any S3-compatible store (s3://bucket/prefix). Credentials come from
// the AWS SDK's default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or an
// instance role), never from our configuration; INGEST_S3_ENDPOINT, INGEST_S3_REGION and
// INGEST_S3_FORCE_PATH_STYLE point it at a store other than AWS.

import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { BucketError, type BucketObject, type CorpusBucket } from './bucket.ts';

/** Names what went wrong without the SDK's request details (which may carry signed headers). */
function named(action: string, key: string, error: unknown): BucketError {
  const name = error instanceof Error ? error.name : 'Error';
  return new BucketError(`S3 ${action} of "${key}" failed: ${name}`, { cause: error });
}

export function s3Bucket(url: URL, options: Config['s3'], log: Logger): CorpusBucket {
  const bucket = url.hostname;
  const trimmed = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  const prefix = trimmed === '' ? '' : `${trimmed}/`;
  const client = new S3Client({
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    // The SDK writes some warnings to the console unless given a logger: route them to ours.
    logger: {
      trace() {},
      debug() {},
      info() {},
      warn: (message: unknown) => log.warn({ sdk: 's3' }, String(message)),
      error: (message: unknown) => log.error({ sdk: 's3' }, String(message)),
    },
    // Stores other than AWS often lack the SDK's default flexible checksums (a streamed upload
    // is then sent aws-chunked, which such a store may keep verbatim): there, checksums only
    // where the operation requires them.
    ...(options.endpoint === null
      ? {}
      : {
          endpoint: options.endpoint,
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        }),
  });
  return {
    location: `s3://${bucket}/${prefix}`,
    async *list(): AsyncGenerator<BucketObject> {
      let token: string | undefined;
      do {
        const page = await client
          .send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }))
          .catch((error: unknown) => {
            throw named('listing', prefix, error);
          });
        for (const object of page.Contents ?? []) {
          // Keys ending in / are the "folders" some tools create: no bytes, not documents.
          if (object.Key === undefined || object.Key.endsWith('/')) continue;
          yield {
            key: object.Key.slice(prefix.length),
            version: object.ETag ?? `${object.Size}:${object.LastModified?.toISOString()}`,
            size: object.Size ?? 0,
          };
        }
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    },
    async download(key, to) {
      const object = await client
        .send(new GetObjectCommand({ Bucket: bucket, Key: prefix + key }))
        .catch((error: unknown) => {
          throw named('download', key, error);
        });
      await pipeline(object.Body as Readable, createWriteStream(to));
    },
    async upload(key, from) {
      const { size } = await stat(from);
      const put = await client
        .send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: prefix + key,
            Body: createReadStream(from),
            ContentLength: size,
          }),
        )
        .catch((error: unknown) => {
          throw named('upload', key, error);
        });
      return put.ETag ?? '';
    },
    async remove(key) {
      // S3 answers a delete of a missing key with success, as this interface promises.
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: prefix + key })).catch((error: unknown) => {
        throw named('removal', key, error);
      });
    },
    close() {
      client.destroy();
    },
  };
}
