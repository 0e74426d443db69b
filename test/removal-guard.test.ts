// @engine
// The walk never empties the database because its corpus looks empty or moved (issue: "an empty
// or wrong corpus wipes the database"): the state store is bound to its corpus root, and a walk
// that would remove most of the known documents keeps every row unless the operator allows it.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { walk } from '../engine/walk/walk.ts';
import { removalNeedsConsent } from '../stages/cleanup.ts';
import { markdown, walkFixture, type WalkFixture } from './helpers/walk.ts';

const FILES = ['a.md', 'b.md', 'c.md', 'd.md'];

let f: WalkFixture;
test.before.each(async () => {
  f = await walkFixture();
  for (const name of FILES) await f.write(name, markdown(`Document ${name}`, 3));
});
test.after.each(async () => {
  await f.dispose();
});

async function chunks(): Promise<number> {
  const { rows } = await f.target.db.query<{ n: number }>('SELECT count(*)::int AS n FROM content_chunks');
  return rows[0]!.n;
}

async function emptyCorpus(): Promise<void> {
  for (const name of FILES) await rm(path.join(f.corpus, name));
}

test('the guard: nothing to remove or allowed never asks; an empty listing always does; past the share and the floor it does', () => {
  const guard = { maxPercent: 50, minItems: 10, allow: false };
  assert.not.ok(removalNeedsConsent(0, 100, 0, guard));
  assert.ok(removalNeedsConsent(1, 1, 0, guard), 'a corpus that lists nothing');
  assert.not.ok(removalNeedsConsent(100, 100, 0, { ...guard, allow: true }));
  assert.not.ok(removalNeedsConsent(10, 12, 2, guard), 'at the floor');
  assert.ok(removalNeedsConsent(11, 12, 1, guard));
  assert.not.ok(removalNeedsConsent(50, 100, 50, guard), 'at the share');
  assert.ok(removalNeedsConsent(51, 100, 49, guard));
});

test('an empty corpus keeps every row, warns on the summary and the run record, and the files coming back cost nothing', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await chunks();
  assert.ok(before > 0);
  await emptyCorpus();
  const empty = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(empty.status, 'completed');
  assert.equal(
    empty.warnings.map((w) => w.name),
    ['mass_removal_refused'],
  );
  assert.equal([empty.items.removed, empty.rowsDeleted], [0, 0]);
  assert.is(await chunks(), before);
  const { rows } = await f.target.db.query<{ result: { warnings?: { name: string }[] } }>(
    'SELECT result FROM pipeline_runs WHERE op_id = $1',
    [empty.opId],
  );
  assert.equal(
    rows[0]!.result.warnings?.map((w) => w.name),
    ['mass_removal_refused'],
  );

  for (const name of FILES) await f.write(name, markdown(`Document ${name}`, 3));
  const back = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([back.items.unchanged, back.items.changed, back.warnings.length], [FILES.length, 0, 0]);
});

test('allowed for one walk, the removal goes ahead', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  await emptyCorpus();
  const allowed = await walk(f.lifespan, { sourcePath: f.corpus, allowMassRemoval: true });
  assert.equal([allowed.items.removed, allowed.warnings.length], [FILES.length, 0]);
  assert.is(await chunks(), 0);
});

test('past the share of known documents the removal waits for consent; a smaller one does not', async () => {
  await f.reopen(undefined, { INGEST_REMOVAL_GUARD_MIN_DOCS: '1' });
  await walk(f.lifespan, { sourcePath: f.corpus });
  await rm(path.join(f.corpus, 'a.md'));
  const one = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([one.items.removed, one.warnings.length], [1, 0], '1 of 4 goes');
  await rm(path.join(f.corpus, 'b.md'));
  await rm(path.join(f.corpus, 'c.md'));
  const two = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([two.items.removed, two.warnings.map((w) => w.name)], [0, ['mass_removal_refused']], '2 of 3 wait');
});

test('moving the whole corpus into a folder loses no document, so it needs no consent and leaves no stale rows', async () => {
  await f.reopen(undefined, { INGEST_REMOVAL_GUARD_MIN_DOCS: '1' });
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await chunks();
  await mkdir(path.join(f.corpus, 'moved'));
  for (const name of FILES) await rename(path.join(f.corpus, name), path.join(f.corpus, 'moved', name));
  const moved = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([moved.items.removed, moved.warnings.length], [FILES.length, 0]);
  assert.is(await chunks(), before, 'the documents kept their rows');
  // Had the old paths' memos been kept, they would still hold the document against this edit.
  await f.write('moved/a.md', markdown('Document a.md, edited after the move', 3));
  await walk(f.lifespan, { sourcePath: f.corpus });
  const { rows } = await f.target.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM source_documents d
      WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.source_document_id = d.id)`,
  );
  assert.is(rows[0]!.n, FILES.length, 'no document is left with rows that no file holds');
});

test('a walk of another corpus root is refused by name and changes nothing; rebound, it walks', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await chunks();
  const other = path.join(f.root, 'other');
  await mkdir(other);
  await writeFile(path.join(other, 'z.md'), markdown('Other', 2));
  const refused = await walk(f.lifespan, { sourcePath: other });
  assert.is(refused.status, 'failed');
  assert.match(refused.error ?? '', /rebind-corpus/);
  assert.is(await chunks(), before);
  assert.is(refused.items.seen, 0, 'nothing was walked');

  const rebound = await walk(f.lifespan, { sourcePath: other, rebindCorpus: true, allowMassRemoval: true });
  assert.equal([rebound.status, rebound.items.changed, rebound.items.removed], ['completed', 1, FILES.length]);
});

test('the same corpus through a symbolic link is the same corpus', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const link = path.join(f.root, 'link');
  await symlink(f.corpus, link);
  const again = await walk(f.lifespan, { sourcePath: link });
  assert.equal([again.status, again.items.unchanged], ['completed', FILES.length]);
});

test.run();
