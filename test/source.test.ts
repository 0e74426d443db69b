import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { nameToText, walkFiles, type SkippedEntry, type UnlistedDirectory } from '../lib/corpus/files.ts';

const silent = pino({ level: 'silent' });
let root: string;
let corpus: string;

test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-source-'));
  corpus = path.join(root, 'corpus');
  await mkdir(path.join(corpus, 'a', 'b'), { recursive: true });
  await writeFile(path.join(corpus, 'top.md'), 'top');
  await writeFile(path.join(corpus, 'a', 'mid.md'), 'mid');
  await writeFile(path.join(corpus, 'a', 'b', 'deep.md'), 'deep');
});
test.after.each(() => rmSync(root, { recursive: true, force: true }));

async function collect(dir = corpus, exclude: string[] = []) {
  const skipped: SkippedEntry[] = [];
  const unlisted: UnlistedDirectory[] = [];
  const files: string[] = [];
  const options = {
    exclude,
    onSkip: (s: SkippedEntry) => skipped.push(s),
    onUnlisted: (u: UnlistedDirectory) => unlisted.push(u),
  };
  for await (const item of walkFiles(dir, silent, options)) files.push(item.relPath);
  return { files: files.sort(), skipped, unlisted };
}

test('walks recursively with corpus-relative paths and file stats', async () => {
  const { files } = await collect();
  assert.equal(files, ['a/b/deep.md', 'a/mid.md', 'top.md']);
  for await (const item of walkFiles(corpus, silent)) {
    assert.ok(item.size > 0);
    assert.ok(typeof item.mtimeNs === 'bigint');
  }
});

test('dot-files and dot-directories are not documents', async () => {
  await mkdir(path.join(corpus, '.git'));
  await writeFile(path.join(corpus, '.git', 'HEAD'), 'ref');
  await writeFile(path.join(corpus, 'a', '.draft.md.swp'), 'x');
  assert.equal((await collect()).files, ['a/b/deep.md', 'a/mid.md', 'top.md']);
});

test('symbolic links are followed inside the corpus and refused when they leave it', async () => {
  await writeFile(path.join(root, 'outside.md'), 'secret');
  await symlink(path.join(root, 'outside.md'), path.join(corpus, 'escape.md'));
  await symlink(root, path.join(corpus, 'escape-dir'));
  await symlink(path.join(corpus, 'top.md'), path.join(corpus, 'alias.md'));
  await symlink(path.join(corpus, 'a'), path.join(corpus, 'a', 'b', 'loop'));
  await symlink(path.join(corpus, 'nowhere.md'), path.join(corpus, 'dangling.md'));
  const { files, skipped } = await collect();
  assert.ok(files.includes('alias.md'));
  assert.not.ok(
    files.some((f) => f.includes('escape')),
    'nothing outside the corpus is yielded',
  );
  assert.equal(skipped.map((s) => [s.relPath, s.kind, s.reason]).sort(), [
    ['dangling.md', 'broken_link', 'broken symbolic link'],
    ['escape-dir', 'link_outside_corpus', 'symbolic link leads outside the corpus'],
    ['escape.md', 'link_outside_corpus', 'symbolic link leads outside the corpus'],
  ]);
  // The loop a/b/loop -> a is entered once at most: the walk terminates with finite output.
  assert.ok(files.length < 20);
});

test('a name that is not UTF-8 gets a stable escaped path and can still be read', async () => {
  const raw = Buffer.concat([Buffer.from(corpus + '/caf'), Buffer.from([0xe9]), Buffer.from('.md')]);
  await writeFile(raw, 'latin-1 name');
  const items = [];
  for await (const item of walkFiles(corpus, silent)) items.push(item);
  const odd = items.find((i) => i.relPath.startsWith('caf'));
  assert.is(odd?.relPath, 'caf%E9.md');
  assert.ok(odd!.absPath.equals(raw));
  assert.is(nameToText(Buffer.from('ünïcødé ✓.md')), 'ünïcødé ✓.md');
  assert.is(nameToText(Buffer.from([0x61, 0xc3, 0x28])), 'a%C3(');
});

test('special files are skipped with a reason', async () => {
  const fifo = path.join(corpus, 'pipe.md');
  if (spawnSync('mkfifo', [fifo]).status !== 0) assert.unreachable('mkfifo is needed for this test');
  const { files, skipped } = await collect();
  assert.not.ok(files.includes('pipe.md'));
  assert.equal(skipped, [{ relPath: 'pipe.md', kind: 'not_a_file', reason: 'not a regular file' }]);
});

test('a directory gone between listing its parent and opening it is reported unlisted, not skipped', async () => {
  // The walk opens a subdirectory only once its parent is listed, so removing it when the
  // parent's first file comes is a real ENOENT mid-walk.
  const files: string[] = [];
  const unlisted: UnlistedDirectory[] = [];
  const skipped: SkippedEntry[] = [];
  const options = {
    onSkip: (s: SkippedEntry) => skipped.push(s),
    onUnlisted: (u: UnlistedDirectory) => unlisted.push(u),
  };
  for await (const item of walkFiles(corpus, silent, options)) {
    if (files.length === 0) await rename(path.join(corpus, 'a'), path.join(root, 'a-away'));
    files.push(item.relPath);
  }
  assert.equal(files, ['top.md']);
  assert.equal(unlisted, [{ relPath: 'a', reason: 'cannot read directory: ENOENT' }]);
  assert.equal(skipped, []);
});

test('an excluded directory inside the corpus is not entered, by its own path or through a link; the root always is', async () => {
  await mkdir(path.join(corpus, 'service-data', 'bundle'), { recursive: true });
  await writeFile(path.join(corpus, 'service-data', 'bundle', 'concept.md'), 'not a document');
  await symlink(path.join(corpus, 'service-data'), path.join(corpus, 'a', 'data-link'));
  const excluded = await collect(corpus, [path.join(corpus, 'service-data'), path.join(root, 'elsewhere'), corpus]);
  assert.equal(excluded.files, ['a/b/deep.md', 'a/mid.md', 'top.md']);
  assert.equal([excluded.skipped, excluded.unlisted], [[], []]);
  assert.ok((await collect()).files.includes('service-data/bundle/concept.md'), 'walked when not excluded');
});

test.run();
