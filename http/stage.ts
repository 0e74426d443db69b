// POST /stage (docs/behaviour/routes.md#post-stage): a multipart byte-drop from loopback peers
// only. Fields: destPath (corpus-relative; the ?failStage5=<mode> directive allowed) and one file
// part. The bytes land atomically (a dot-prefixed temp file in the target directory, then a
// rename), and the answer echoes the path written. With a corpus bucket configured, the bytes go to
// the bucket first (it is authoritative): a failed upload is a 502 with nothing written locally,
// and pull-sync will not fetch what was staged again.
//
// Staging does not wait for a walk (stage-while-walking is the load the service is built for): the
// writer fence keeps walkers apart, and a staged file cannot hurt one. The walk never reads a
// half-written file (the temp file is a dot-file, which the walk skips, until the rename), reads
// a file replaced under it as either version (its memo then holds the hash of what it read, and
// the next walk sees the new stat and looks again), and a file created in a folder it has
// passed is the next walk's. Staged during a pull-sync, a file the sync's listing missed may be
// removed from the working copy; the bucket has it, so the next pull-sync brings it back.

import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, realpath, rename, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import busboy from 'busboy';
import { FAIL_STAGE5_MODES } from '../lib/failure-directive.ts';
import { BucketError, type CorpusBucket } from '../lib/bucket/bucket.ts';
import { openBucket } from '../lib/bucket/index.ts';
import { SyncManifest } from '../lib/bucket/manifest.ts';
import { HttpError } from './errors.ts';
import { defineRoute } from './route.ts';
import { failStage5Mode } from './schemas.ts';
import { parseStagePath } from './stage-path.ts';

interface Upload {
  destPath: string | undefined;
  tempFile: string | null;
  bytes: number;
}

const StageRequest = Type.Object(
  {
    destPath: Type.String({
      description:
        'Corpus-relative file path ("/"-separated; no absolute path, "..", empty or "." segment, hidden segment, backslash, NUL, or percent-encoded dot or separator). ' +
        `A "?" suffix is refused unless it is the one directive ?failStage5=<${FAIL_STAGE5_MODES.join('|')}>, which is stripped and armed for the next walk. "#" and other punctuation are part of the name.`,
    }),
    file: Type.String({
      contentMediaType: 'application/octet-stream',
      description: 'the bytes to write; at most INGEST_MAX_DOCUMENT_BYTES',
    }),
  },
  { $id: 'StageRequest', description: 'multipart/form-data: the destPath field and one file part' },
);

const StageResult = Type.Object(
  {
    path: Type.String({ description: 'the corpus-relative path written (the directive stripped)' }),
    bytes: Type.Integer({ minimum: 0, description: 'bytes written' }),
    failStage5: Type.Optional(failStage5Mode('the directive armed for the next walk, when destPath carried one')),
  },
  { $id: 'StageResult', additionalProperties: false },
);

export const stageRoute = defineRoute({
  method: 'POST',
  path: '/stage',
  operationId: 'stage',
  tag: 'corpus',
  summary: 'Drop one file into the corpus',
  description:
    'Loopback peers only, no bearer (not publicly routed). The bytes land atomically (a hidden temp file, then a rename) and, with a corpus bucket configured, go to the bucket first. Staging never waits for a walk. Every refusal writes nothing.',
  auth: 'none',
  loopbackOnly: true,
  // Streamed by busboy in the handler, never buffered.
  body: { kind: 'own', required: true, content: { 'multipart/form-data': StageRequest } },
  answers: { 201: { description: 'written', schema: StageResult } },
  refusals: [
    {
      status: 503,
      error: 'no_corpus',
      when: 'ENGINE_SOURCE_PATH is not set (idle mode): there is nowhere to stage',
    },
    { status: 400, error: 'not_multipart', when: 'the body is not multipart/form-data' },
    { status: 400, error: 'bad_multipart', when: 'the multipart body cannot be read' },
    { status: 400, error: 'dest_path_missing', when: 'no destPath field, or an empty one' },
    {
      status: 400,
      error: 'dest_path_invalid',
      when: 'destPath could leave the corpus or names a hidden file (the rules under StageRequest.destPath)',
    },
    { status: 400, error: 'file_missing', when: 'no file part' },
    { status: 400, error: 'unknown_suffix', when: 'a "?" suffix other than ?failStage5', validModes: true },
    { status: 400, error: 'directive_without_path', when: 'a "?" suffix with no path before it', validModes: true },
    { status: 400, error: 'directive_missing_value', when: '?failStage5 without =<mode>', validModes: true },
    { status: 400, error: 'unknown_mode', when: '?failStage5=<mode> with an unknown mode', validModes: true },
    { status: 413, error: 'file_too_large', when: 'the file part is over INGEST_MAX_DOCUMENT_BYTES' },
    {
      status: 502,
      error: 'bucket_write_failed',
      when: 'the corpus bucket did not take the file; nothing was written locally',
    },
  ],
  handler: ({ config, directive, log }) => {
    const corpus = config.sourcePath;
    const stateDir = config.stateStorePath;
    const maxBytes = config.convert.maxDocumentBytes;
    const bucket = openBucket(config, log);
    return async ({ req, send }) => {
      if (corpus === null)
        throw new HttpError(503, 'no_corpus', 'ENGINE_SOURCE_PATH is not configured; there is nowhere to stage');
      await mkdir(corpus, { recursive: true });
      const upload = await receive(req, corpus, maxBytes);
      try {
        const target = await confinedTarget(corpus, parseStagePath(upload.destPath));
        if (upload.tempFile === null) throw new HttpError(400, 'file_missing', 'the multipart body needs a file part');
        const version = bucket === null ? null : await uploadToBucket(bucket, target.path, upload.tempFile);
        await mkdir(path.dirname(target.absolute), { recursive: true });
        await rename(upload.tempFile, target.absolute);
        upload.tempFile = null;
        if (version !== null) await recordStaged(stateDir, target.path, version, target.absolute);
        if (target.failStage5 !== null) directive.arm(target.failStage5);
        send(201, {
          path: target.path,
          bytes: upload.bytes,
          ...(target.failStage5 === null ? {} : { failStage5: target.failStage5 }),
        });
      } finally {
        if (upload.tempFile !== null) await rm(upload.tempFile, { force: true });
      }
    };
  },
});

/** Streams the file part to a temp file in the corpus root (same filesystem: rename is atomic). */
function receive(req: IncomingMessage, corpus: string, maxBytes: number): Promise<Upload> {
  return new Promise((resolve, reject) => {
    const upload: Upload = { destPath: undefined, tempFile: null, bytes: 0 };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fields: 4, fileSize: maxBytes } });
    } catch {
      reject(new HttpError(400, 'not_multipart', 'send multipart/form-data with a destPath field and a file part'));
      return;
    }
    const writes: Promise<void>[] = [];
    parser.on('field', (name, value) => {
      if (name === 'destPath') upload.destPath = value;
    });
    parser.on('file', (_name, stream: Readable & { truncated?: boolean }) => {
      const temp = path.join(corpus, `.stage-${randomBytes(8).toString('hex')}.tmp`);
      upload.tempFile = temp;
      const count = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          upload.bytes += chunk.length;
          done(null, chunk);
        },
      });
      writes.push(
        pipeline(stream, count, createWriteStream(temp, { flags: 'wx' })).then(() => {
          if (stream.truncated) throw new HttpError(413, 'file_too_large', `the file is over ${maxBytes} bytes`);
        }),
      );
    });
    parser.on('error', () => reject(new HttpError(400, 'bad_multipart', 'the multipart body could not be read')));
    parser.on('close', () => {
      Promise.all(writes).then(
        () => resolve(upload),
        async (error: unknown) => {
          if (upload.tempFile !== null) await rm(upload.tempFile, { force: true });
          reject(error);
        },
      );
    });
    req.pipe(parser);
  });
}

async function confinedTarget(corpus: string, parsed: ReturnType<typeof parseStagePath>) {
  const realCorpus = await realpath(corpus);
  const absolute = path.join(realCorpus, ...parsed.path.split('/'));
  // The deepest existing ancestor must resolve inside the corpus (a symlinked directory must
  // not carry the write elsewhere).
  let existing = path.dirname(absolute);
  for (;;) {
    const resolved = await realpath(existing).catch(() => null);
    if (resolved !== null) {
      if (resolved !== realCorpus && !resolved.startsWith(realCorpus + path.sep))
        throw new HttpError(400, 'dest_path_invalid', 'destPath leads outside the corpus');
      break;
    }
    existing = path.dirname(existing);
  }
  return { ...parsed, absolute };
}

async function uploadToBucket(bucket: CorpusBucket, key: string, file: string): Promise<string> {
  try {
    return await bucket.upload(key, file);
  } catch (error) {
    throw new HttpError(
      502,
      'bucket_write_failed',
      `the corpus bucket did not take the file: ${error instanceof BucketError ? error.message : (error as Error).name}; nothing was staged`,
    );
  }
}

async function recordStaged(stateDir: string, key: string, version: string, file: string): Promise<void> {
  const manifest = await SyncManifest.load(stateDir);
  await manifest.record(key, version, file);
  await manifest.save();
}
