// A corpus bucket on S3 or any S3-compatible store (s3://bucket/prefix). Credentials come from
// the AWS SDK's default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or an
// instance role), never from our configuration; INGEST_S3_ENDPOINT, INGEST_S3_REGION and
// INGEST_S3_FORCE_PATH_STYLE point it at a store other than AWS.

import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { BucketError, type BucketObject, type CorpusBucket } from './bucket.ts';

/** Names what went wrong without the SDK's request details (which may carry signed headers). */
function named(action: string, key: string, error: unknown): BucketError {
  const name = error instanceof Error ? error.name : 'Error';
  return new BucketError(`S3 ${action} of "${key}" failed: ${name}`, { cause: error });
}

type S3Sdk = typeof import('@aws-sdk/client-s3');

function s3Client(sdk: S3Sdk, options: Config['s3'], log: Logger): S3Client {
  return new sdk.S3Client({
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
}

export function s3Bucket(url: URL, options: Config['s3'], log: Logger): CorpusBucket {
  return new S3Bucket(url, options, log);
}

class S3Bucket implements CorpusBucket {
  readonly location: string;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #options: Config['s3'];
  readonly #log: Logger;
  /**
   * The SDK and its client, from the bucket's first use on: every walk imports this module and
   * most have no S3 bucket, and importing the SDK with it cost each of them some 80 ms of start-up.
   */
  #connected: Promise<{ sdk: S3Sdk; client: S3Client }> | undefined;

  constructor(url: URL, options: Config['s3'], log: Logger) {
    this.#bucket = url.hostname;
    const trimmed = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
    this.#prefix = trimmed === '' ? '' : `${trimmed}/`;
    this.location = `s3://${this.#bucket}/${this.#prefix}`;
    this.#options = options;
    this.#log = log;
  }

  #connect(): Promise<{ sdk: S3Sdk; client: S3Client }> {
    return (this.#connected ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      client: s3Client(sdk, this.#options, this.#log),
    })));
  }

  async *list(): AsyncGenerator<BucketObject> {
    const { sdk, client } = await this.#connect();
    const prefix = this.#prefix;
    let token: string | undefined;
    do {
      const page = await client
        .send(new sdk.ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ContinuationToken: token }))
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
  }

  async download(key: string, to: string): Promise<void> {
    const { sdk, client } = await this.#connect();
    const object = await client
      .send(new sdk.GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }))
      .catch((error: unknown) => {
        throw named('download', key, error);
      });
    await pipeline(object.Body as Readable, createWriteStream(to));
  }

  async upload(key: string, from: string): Promise<string> {
    const { size } = await stat(from);
    const { sdk, client } = await this.#connect();
    const put = await client
      .send(
        new sdk.PutObjectCommand({
          Bucket: this.#bucket,
          Key: this.#prefix + key,
          Body: createReadStream(from),
          ContentLength: size,
        }),
      )
      .catch((error: unknown) => {
        throw named('upload', key, error);
      });
    return put.ETag ?? '';
  }

  async remove(key: string): Promise<void> {
    const { sdk, client } = await this.#connect();
    // S3 answers a delete of a missing key with success, as this interface promises.
    await client
      .send(new sdk.DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }))
      .catch((error: unknown) => {
        throw named('removal', key, error);
      });
  }

  close(): void {
    // A bucket never used has no client; one whose SDK failed to load has nothing to release.
    this.#connected?.then(
      ({ client }) => client.destroy(),
      () => {},
    );
  }
}
