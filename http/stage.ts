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
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import busboy from 'busboy';
import type { FailureDirective } from '../lib/failure-directive.ts';
import { BucketError, type CorpusBucket } from '../lib/bucket/bucket.ts';
import { SyncManifest } from '../lib/bucket/manifest.ts';
import { HttpError, sendJson } from './errors.ts';
import { isLoopback } from './auth.ts';
import { parseStagePath } from './stage-path.ts';

export interface StageRouteDeps {
  corpus: string | null;
  stateDir: string;
  maxBytes: number;
  directive: FailureDirective;
  bucket: CorpusBucket | null;
}

interface Upload {
  destPath: string | undefined;
  tempFile: string | null;
  bytes: number;
}

export function stageRoute(deps: StageRouteDeps) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!isLoopback(req.socket.remoteAddress))
      throw new HttpError(403, 'loopback_only', '/stage accepts connections from loopback only');
    if (deps.corpus === null)
      throw new HttpError(503, 'no_corpus', 'ENGINE_SOURCE_PATH is not configured; there is nowhere to stage');
    const corpus = deps.corpus;
    await mkdir(corpus, { recursive: true });
    const upload = await receive(req, corpus, deps.maxBytes);
    try {
      const target = await confinedTarget(corpus, parseStagePath(upload.destPath));
      if (upload.tempFile === null) throw new HttpError(400, 'file_missing', 'the multipart body needs a file part');
      const version = deps.bucket === null ? null : await uploadToBucket(deps.bucket, target.path, upload.tempFile);
      await mkdir(path.dirname(target.absolute), { recursive: true });
      await rename(upload.tempFile, target.absolute);
      upload.tempFile = null;
      if (version !== null) await recordStaged(deps.stateDir, target.path, version, target.absolute);
      if (target.failStage5 !== null) deps.directive.arm(target.failStage5);
      sendJson(res, 201, {
        path: target.path,
        bytes: upload.bytes,
        ...(target.failStage5 === null ? {} : { failStage5: target.failStage5 }),
      });
    } finally {
      if (upload.tempFile !== null) await rm(upload.tempFile, { force: true });
    }
  };
}

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
