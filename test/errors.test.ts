import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { atStage, StageError } from '../engine/item/at-stage.ts';
import { HttpError } from '../http/errors.ts';
import { codeOf, IngestError, UNEXPECTED_ERROR } from '../lib/errors.ts';
import { ModelCallError } from '../lib/llm/retry.ts';
import { ConversionError } from '../stages/convert/index.ts';
import { JOB_ERROR_CODES, JobError } from '../worker/errors.ts';

const root = path.resolve(import.meta.dirname, '..');

/** Every .ts file under `dirs`, relative to the repository. */
async function sources(dirs: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const dir of dirs) {
    for (const entry of await readdir(path.join(root, dir), { recursive: true, withFileTypes: true })) {
      if (entry.isFile() && entry.name.endsWith('.ts'))
        found.push(path.relative(root, path.join(entry.parentPath, entry.name)));
    }
  }
  return found;
}

const SERVICE = ['bin', 'cli', 'http', 'engine', 'stages', 'lib', 'mock', 'worker', 'bench'];

test('every error class of the service extends IngestError; only IngestError extends Error', async () => {
  const offenders: string[] = [];
  for (const file of await sources(SERVICE)) {
    const text = await readFile(path.join(root, file), 'utf8');
    for (const [, name] of text.matchAll(/class (\w+) extends (?:Error|TypeError|RangeError)\b/g)) {
      if (!(file === path.join('lib', 'errors.ts') && name === 'IngestError')) offenders.push(`${file}: ${name}`);
    }
  }
  assert.equal(offenders, []);
});

test('every fixed code of an IngestError class is listed in docs/ERRORS.md', async () => {
  const listed = await readFile(path.join(root, 'docs', 'ERRORS.md'), 'utf8');
  const codes: string[] = [];
  for (const file of await sources(SERVICE)) {
    const text = await readFile(path.join(root, file), 'utf8');
    for (const [, code] of text.matchAll(/extends IngestError \{[^}]*?super\(\s*'([a-z0-9_]+)'/gs)) codes.push(code!);
  }
  assert.ok(codes.length >= 20, `found ${codes.length} fixed codes`);
  assert.equal(
    codes.filter((code) => !listed.includes(`\`${code}\``)),
    [],
  );
});

test("every code a job fails with is listed in docs/ERRORS.md's table of jobs", async () => {
  const listed = await readFile(path.join(root, 'docs', 'ERRORS.md'), 'utf8');
  const jobs = listed.slice(listed.indexOf('`JobError`'), listed.indexOf('`HttpError`'));
  assert.equal(
    JOB_ERROR_CODES.filter((code) => !jobs.includes(`| \`${code}\``)),
    [],
  );
});

test("codeOf: ours as it stands, a foreign error's own string code, else unexpected_error", async () => {
  assert.is(codeOf(new ConversionError('zip_bomb', 'inflates past the limit')), 'zip_bomb');
  assert.is(codeOf(new ModelCallError('failed', 3, new Error('overloaded'))), 'model_call_failed');
  assert.is(codeOf(new HttpError(409, 'walk_in_progress', 'busy')), 'walk_in_progress');
  assert.is(codeOf(new JobError('form_unreadable/corrupt', 'bad', { final: true })), 'form_unreadable/corrupt');
  const missing = await readFile(path.join(root, 'no such file')).catch((e: unknown) => e);
  assert.is(codeOf(missing), 'ENOENT');
  assert.is(codeOf(new TypeError('x is not a function')), UNEXPECTED_ERROR);
  assert.is(codeOf(new DOMException('late', 'TimeoutError')), UNEXPECTED_ERROR, 'a numeric code is no code');
  assert.is(codeOf('a string thrown'), UNEXPECTED_ERROR);
  assert.is(codeOf(null), UNEXPECTED_ERROR);
});

test('an error keeps its class name, message and cause under the base', () => {
  const cause = new Error('overloaded');
  const error = new ModelCallError('model call failed', 2, cause);
  assert.instance(error, IngestError);
  assert.is(error.name, 'ModelCallError');
  assert.is(error.message, 'model call failed');
  assert.is(error.cause, cause);
  assert.ok(String(error.stack).startsWith('ModelCallError: model call failed'));
});

test('a stage failure carries its cause code: ours, or the one fallback', async () => {
  const conversion = await atStage('convert', () => {
    throw new ConversionError('corrupt', 'unreadable');
  }).catch((e: unknown) => e);
  assert.instance(conversion, StageError);
  assert.equal([(conversion as StageError).stage, (conversion as StageError).code], ['convert', 'corrupt']);
  const foreign = await atStage('chunk', () => {
    throw new RangeError('index out of range');
  }).catch((e: unknown) => e);
  assert.equal(
    [(foreign as StageError).code, (foreign as StageError).message],
    [UNEXPECTED_ERROR, 'index out of range'],
  );
});

test.run();
