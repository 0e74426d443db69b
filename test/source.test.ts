import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { nameToText, walkFiles, type SkippedEntry } from '../lib/corpus/files.ts';

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

async function collect(dir = corpus) {
  const skipped: SkippedEntry[] = [];
  const files: string[] = [];
  for await (const item of walkFiles(dir, silent, (s) => skipped.push(s))) files.push(item.relPath);
  return { files: files.sort(), skipped };
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
  assert.equal(skipped.map((s) => [s.relPath, s.reason]).sort(), [
    ['dangling.md', 'broken symbolic link'],
    ['escape-dir', 'symbolic link leads outside the corpus'],
    ['escape.md', 'symbolic link leads outside the corpus'],
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
  assert.equal(skipped, [{ relPath: 'pipe.md', reason: 'not a regular file' }]);
});

test.run();
