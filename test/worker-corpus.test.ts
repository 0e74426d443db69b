// Where a walk worker reads an item's bytes (engine/walk/worker-corpus.ts), on a real file://
// corpus bucket: a copy whose bytes hash as the coordinator's takes the coordinator's stat, a
// copy of newer bytes keeps its own, a key that could leave the corpus is refused, and no copy
// outlives the item's life.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { openBucket } from '../lib/bucket/index.ts';
import { loadConfig } from '../lib/config.ts';
import { sha256Hex } from '../lib/hash.ts';
import { StageError } from '../engine/item/at-stage.ts';
import { BucketCorpus, type SeenFile } from '../engine/walk/worker-corpus.ts';

const log = pino({ level: 'silent' });
let root: string;
let scratchRoot: string;
/** This corpus's own directory under scratchRoot. */
let scratch: string;
let corpus: BucketCorpus;

test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-worker-corpus-'));
  mkdirSync(path.join(root, 'bucket', 'notes'), { recursive: true });
  writeFileSync(path.join(root, 'bucket', 'notes', 'a.md'), '# A\n');
  scratchRoot = path.join(root, 'scratch');
  // A killed worker's directory (no process runs under pid 2^22 + 1), a live one's (this
  // process's), and one of another host, whose pids this host cannot judge.
  mkdirSync(path.join(scratchRoot, `${hostname()}-${2 ** 22 + 1}-dead`), { recursive: true });
  mkdirSync(path.join(scratchRoot, `${hostname()}-${process.pid}-alive`));
  mkdirSync(path.join(scratchRoot, `another-host-${2 ** 22 + 1}-elsewhere`));
  const config = loadConfig({ INGEST_CORPUS_BUCKET: pathToFileURL(path.join(root, 'bucket')).href }, root);
  corpus = await BucketCorpus.open(openBucket(config, log)!, scratchRoot, log);
  const mine = readdirSync(scratchRoot).filter((name) => !/-(alive|elsewhere)$/.test(name));
  assert.is(mine.length, 1, "the dead worker's directory is gone, this one's made");
  scratch = path.join(scratchRoot, mine[0]!);
});
test.after.each(() => {
  corpus.close();
  assert.equal(
    readdirSync(scratchRoot).sort(),
    [`${hostname()}-${process.pid}-alive`, `another-host-${2 ** 22 + 1}-elsewhere`].sort(),
    'closed, the corpus leaves no directory of its own, and kept the others',
  );
  rmSync(root, { recursive: true, force: true });
});

/** What the coordinator would have queued for `text` at a stat of its own copy. */
const seen = (text: string): SeenFile => ({ sha256: sha256Hex(text), size: text.length, mtimeNs: '1000', ino: '7' });

test('a copy with the bytes the coordinator hashed takes its stat; the copy goes with the item', async () => {
  assert.equal(readdirSync(scratch), [], 'its directory starts empty');
  const held = await corpus.hold('notes/a.md', seen('# A\n'));
  assert.is(await readFile(held.file.absPath, 'utf8'), '# A\n');
  assert.equal([held.file.mtimeNs, held.file.ino, held.file.size], [1000n, 7n, 4]);
  await held.release();
  assert.equal(readdirSync(scratch), []);
});

test('a copy of newer bytes keeps its own stat, which the coordinator cannot match', async () => {
  const held = await corpus.hold('notes/a.md', seen('# A, as it was\n'));
  const own = statSync(held.file.absPath, { bigint: true });
  assert.equal([held.file.mtimeNs, held.file.ino, held.file.size], [own.mtimeNs, own.ino, 4]);
  await held.release();
});

test('a key that could leave the corpus, or one the bucket does not have, fails the item at admit', async () => {
  for (const key of ['../outside.md', 'notes/missing.md']) {
    try {
      await corpus.hold(key, null);
      assert.unreachable(key);
    } catch (error) {
      assert.instance(error, StageError, key);
      assert.is((error as StageError).stage, 'admit', key);
    }
  }
  assert.equal(readdirSync(scratch), [], 'no copy left behind');
});

test.run();
