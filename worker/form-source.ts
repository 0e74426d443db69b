// A form's bytes from its payload reference: a corpus-relative path (confined to the corpus
// directory, symlinks included), a key of the corpus bucket, or small inline bytes. Every
// problem is a named, final JobError: the same reference fails the same way on every attempt.

import { mkdtemp, readFile, realpath, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CorpusBucket } from '../lib/bucket/bucket.ts';
import { corpusPathProblem } from '../lib/corpus/path.ts';
import { sha256Hex } from '../lib/hash.ts';
import { mediaTypeFor, type MediaType } from '../stages/convert/index.ts';
import { JobError, type JobErrorCode } from './errors.ts';
import type { FormInfo, FormRef } from './payloads.ts';

export interface Form {
  info: FormInfo;
  mediaType: MediaType;
  bytes: Uint8Array;
  /** Where the form sits in the corpus (its path, or its bucket key, which pull-sync writes there); null: inline bytes. */
  corpusPath: string | null;
}

export interface FormSources {
  /** ENGINE_SOURCE_PATH; null: path references cannot be read. */
  corpus: string | null;
  bucket: CorpusBucket | null;
  inlineMaxBytes: number;
  maxBytes: number;
}

const final = (code: JobErrorCode, message: string) => new JobError(code, message, { final: true });

function nameOf(ref: FormRef): string {
  if ('path' in ref) return ref.path;
  if ('bucket_key' in ref) return ref.bucket_key;
  return ref.inline.filename;
}

export async function loadForm(ref: FormRef, sources: FormSources): Promise<Form> {
  const name = nameOf(ref);
  const mediaType = mediaTypeFor(name);
  if (mediaType === null)
    throw final('form_unsupported', `${path.basename(name)}: not a PDF, DOCX, XLSX, HTML, markdown or text file`);
  const bytes = await readBytes(ref, sources);
  return {
    info: { name: path.basename(name), media_type: mediaType, sha256: sha256Hex(bytes), bytes: bytes.byteLength },
    mediaType,
    bytes,
    corpusPath: 'inline' in ref ? null : name,
  };
}

async function readBytes(ref: FormRef, sources: FormSources): Promise<Uint8Array> {
  if ('inline' in ref) {
    const bytes = Buffer.from(ref.inline.base64, 'base64');
    if (bytes.byteLength > sources.inlineMaxBytes)
      throw final('bad_payload', `the inline form is ${bytes.byteLength} bytes, over ${sources.inlineMaxBytes}`);
    return bytes;
  }
  const key = 'path' in ref ? ref.path : ref.bucket_key;
  const problem = corpusPathProblem(key);
  if (problem !== null) throw final('bad_payload', `form ${'path' in ref ? 'path' : 'bucket_key'}: ${problem}`);
  if ('path' in ref) return readCorpusFile(key, sources);
  if (sources.bucket === null) throw final('form_not_found', 'no corpus bucket is configured (INGEST_CORPUS_BUCKET)');
  const dir = await mkdtemp(path.join(tmpdir(), 'ingest-form-'));
  try {
    const file = path.join(dir, 'form');
    await sources.bucket.download(key, file).catch((error: unknown) => {
      throw new JobError('form_not_found', `bucket key ${key}: ${(error as Error).message}`, {
        final: true,
        cause: error,
      });
    });
    return await readCapped(file, sources.maxBytes);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function readCorpusFile(relPath: string, sources: FormSources): Promise<Uint8Array> {
  if (sources.corpus === null) throw final('form_not_found', 'no corpus directory is configured (ENGINE_SOURCE_PATH)');
  let resolved: string;
  let root: string;
  try {
    root = await realpath(sources.corpus);
    resolved = await realpath(path.join(sources.corpus, ...relPath.split('/')));
  } catch {
    throw final('form_not_found', `${relPath}: no such file in the corpus`);
  }
  if (!resolved.startsWith(root + path.sep)) throw final('bad_payload', `${relPath}: resolves outside the corpus`);
  return readCapped(resolved, sources.maxBytes);
}

async function readCapped(file: string, maxBytes: number): Promise<Uint8Array> {
  const { size, isFile } = await stat(file).then((s) => ({ size: s.size, isFile: s.isFile() }));
  if (!isFile) throw final('form_not_found', `${path.basename(file)} is not a file`);
  if (size > maxBytes) throw final('form_unreadable/too_large', `the form is ${size} bytes, over ${maxBytes}`);
  return readFile(file);
}
