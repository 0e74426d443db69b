// @engine
// What a walk cannot list is not gone (issue: "an unreadable folder loses its documents' rows"):
// a folder that cannot be read keeps its documents' rows and memos and is named by a warning,
// and the first walk that lists it again removes what really went. Also what the listing leaves
// out on purpose: the service's own data directory inside the corpus, and links that lead out
// of it (named, not only counted).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, renameSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { RunWarning } from '../lib/runs/record.ts';
import { LiveItems } from '../engine/walk/live-items.ts';
import { UnlistedDirectories } from '../engine/walk/unlisted.ts';
import { walk, type WalkSummary } from '../engine/walk/walk.ts';
import { giveToUnprivileged, runIngest, UNPRIVILEGED } from './helpers/cli.ts';
import { markdown, walkFixture, type WalkFixture } from './helpers/walk.ts';

const FILES = ['a.md', 'private/one.md', 'private/two.md', 'private/deep/three.md'];

let f: WalkFixture;
test.before.each(async () => {
  f = await walkFixture();
  for (const name of FILES) await f.write(name, markdown(`Document ${name}`, 3));
  // Of no known type: the walk settles it the moment it meets it (walkLosing needs that).
  await f.write('marker.bin', 'x');
});
test.after.each(async () => {
  await f.dispose();
});

async function chunks(): Promise<number> {
  const { rows } = await f.target.db.query<{ n: number }>('SELECT count(*)::int AS n FROM content_chunks');
  return rows[0]!.n;
}

async function recordedWarnings(opId: string): Promise<RunWarning[] | undefined> {
  const { rows } = await f.target.db.query<{ result: { warnings?: RunWarning[] } }>(
    'SELECT result FROM pipeline_runs WHERE op_id = $1',
    [opId],
  );
  return rows[0]!.result.warnings;
}

/**
 * A walk during which `dir` disappears once the walk has listed its parent, and before it opens
 * `dir` (a real ENOENT mid-walk, as root can produce one); `dir` is back when it returns. The
 * first item settled is at the latest marker.bin, which the walk meets while it lists the root.
 */
async function walkLosing(dir: string): Promise<WalkSummary> {
  const away = path.join(f.root, 'away');
  let gone = false;
  const summary = await walk(f.lifespan, {
    sourcePath: f.corpus,
    onProgress: () => {
      if (!gone) renameSync(path.join(f.corpus, dir), away);
      gone = true;
    },
  });
  renameSync(away, path.join(f.corpus, dir));
  return summary;
}

test('a folder the walk cannot list keeps its rows and memos under a warning; listed again, what went goes and what came comes', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await chunks();
  const lost = await walkLosing('private');
  assert.is(lost.status, 'completed');
  assert.equal([lost.items.removed, lost.rowsDeleted], [0, 0]);
  assert.is(await chunks(), before);
  for (const name of FILES) assert.ok((await f.lifespan.store.getItem(`file:${name}`)).memo, `${name} keeps its memo`);
  assert.equal(lost.warnings, [
    {
      name: 'unlisted_directory',
      message:
        'private: cannot read directory: ENOENT; 3 files known under it keep their rows; ' +
        'the first walk that can list it again removes what is gone from it and takes in what is new',
    },
  ]);
  assert.equal(await recordedWarnings(lost.opId), lost.warnings, 'the run record names the folder too');

  await rm(path.join(f.corpus, 'private/two.md'));
  await f.write('private/new.md', markdown('A new document', 3));
  const listed = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([listed.items.removed, listed.items.changed, listed.items.unchanged, listed.warnings], [1, 1, 3, []]);
  assert.is((await f.lifespan.store.getItem('file:private/two.md')).memo, undefined);
  assert.ok(listed.rowsDeleted > 0, 'the removed file lost its rows');
});

test('a document held by a file of an unlisted folder keeps its rows when its other copy is deleted', async () => {
  await f.write('copy.md', markdown('Document private/one.md', 3));
  await walk(f.lifespan, { sourcePath: f.corpus });
  const { rows } = await f.target.db.query<{ id: string }>(
    "SELECT id FROM source_documents WHERE rel_path IN ('copy.md', 'private/one.md')",
  );
  assert.is(rows.length, 1, 'the two files are one document');
  const before = await chunks();
  await rm(path.join(f.corpus, 'copy.md'));
  const lost = await walkLosing('private');
  assert.equal([lost.items.removed, lost.rowsDeleted], [1, 0]);
  assert.is(await chunks(), before);
  const { rows: named } = await f.target.db.query<{ rel_path: string }>(
    'SELECT rel_path FROM source_documents WHERE id = $1',
    [rows[0]!.id],
  );
  assert.is(named[0]!.rel_path, 'private/one.md');
});

test('an unlisted corpus root holds every known file; a nested unlisted folder counts its own', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const unlisted = new UnlistedDirectories();
  for (const relPath of ['private/deep', '', 'private/deep'])
    unlisted.add({ relPath, reason: 'cannot read directory: EIO' });
  const live = new LiveItems();
  const kept = await unlisted.keepKnownItems(f.lifespan.store, live);
  assert.equal([...kept].sort(), [
    ['', 3],
    ['private/deep', 1],
  ]);
  for (const name of FILES) assert.ok(live.seen.has(`file:${name}`));
  assert.is(unlisted.warnings(kept)[0]!.message.split(';')[0], 'the corpus root: cannot read directory: EIO');
});

test('symbolic links that lead outside the corpus are named by a warning', async () => {
  await writeFile(path.join(f.root, 'outside.md'), markdown('Outside', 1));
  await symlink(path.join(f.root, 'outside.md'), path.join(f.corpus, 'escape.md'));
  await symlink(f.root, path.join(f.corpus, 'private', 'escape-dir'));
  const two = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(two.items.skipped, 2);
  assert.equal(two.warnings, [
    {
      name: 'links_outside_corpus',
      message: '2 symbolic links lead outside the corpus and were not walked: escape.md, private/escape-dir',
    },
  ]);
  assert.equal(await recordedWarnings(two.opId), two.warnings);
  await mkdir(path.join(f.corpus, 'links'));
  for (let i = 10; i < 30; i += 1) await symlink(f.root, path.join(f.corpus, 'links', `l${i}`));
  const many = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.match(
    many.warnings[0]!.message,
    /^22 symbolic links lead outside the corpus and were not walked: escape\.md, links\/l10, .*, links\/l2\d and 2 more \(the log names each\)$/,
  );
});

test('the data directory and the bundle directory inside the corpus are never walked', async () => {
  await f.reopen(undefined, { INGEST_DATA_DIR: 'corpus/ingest-data', INGEST_BUNDLE_DIR: 'corpus/published' });
  await f.write('ingest-data/bid-worker-output/job-1/filled.md', markdown('A filled form', 1));
  await f.write('published/current/concept.md', markdown('A concept page', 1));
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([summary.items.seen, summary.items.changed, summary.items.dropped], [FILES.length + 1, FILES.length, 1]);
  const { rows } = await f.target.db.query<{ rel_path: string }>('SELECT rel_path FROM source_documents ORDER BY 1');
  assert.equal(
    rows.map((r) => r.rel_path),
    [...FILES].sort(),
  );
});

test('ingest walk of a corpus with a folder it may not read (chmod 000) keeps the folder; readable again, it walks it', async () => {
  const data = path.join(f.root, 'cli-data');
  const env = {
    INGEST_DATA_DIR: data,
    INGEST_PRODUCER_AFTER_WALK: 'false',
    ...(f.target.dsn === null ? {} : { ENGINE_DB_DSN: f.target.dsn }),
  };
  const giveAway = () => giveToUnprivileged(f.root);
  const walkCli = async () => {
    const run = await runIngest(['walk', f.corpus, '--json'], env, { cwd: f.root, ...UNPRIVILEGED });
    assert.is(run.status, 0, run.stderr.slice(-4000));
    return JSON.parse(run.stdout) as WalkSummary;
  };
  giveAway();
  const first = await walkCli();
  assert.is(first.items.changed, FILES.length);

  chmodSync(path.join(f.corpus, 'private'), 0o000);
  const shut = await walkCli().finally(() => chmodSync(path.join(f.corpus, 'private'), 0o755));
  assert.equal([shut.items.removed, shut.rowsDeleted, shut.items.unchanged], [0, 0, 1]);
  assert.equal(
    shut.warnings.map((w) => [w.name, w.message.split(';')[0]]),
    [['unlisted_directory', 'private: cannot read directory: EACCES']],
  );
  assert.match(shut.warnings[0]!.message, /; 3 files known under it keep their rows;/);
  if (f.target.dsn !== null) assert.equal(await recordedWarnings(shut.opId), shut.warnings);

  await rm(path.join(f.corpus, 'private/two.md'));
  await f.write('private/new.md', markdown('A new document', 3));
  giveAway();
  const open = await walkCli();
  assert.equal(
    [open.items.removed, open.items.changed, open.items.unchanged, open.warnings],
    [1, 1, FILES.length - 1, []],
  );
});

test('ingest walk of a corpus root it may not read keeps every row, prints its summary and exits 3, not 0', async () => {
  const env = {
    INGEST_DATA_DIR: path.join(f.root, 'cli-data'),
    INGEST_PRODUCER_AFTER_WALK: 'false',
    ...(f.target.dsn === null ? {} : { ENGINE_DB_DSN: f.target.dsn }),
  };
  giveToUnprivileged(f.root);
  const first = await runIngest(['walk', f.corpus], env, { cwd: f.root, ...UNPRIVILEGED });
  assert.is(first.status, 0, first.stderr.slice(-4000));
  chmodSync(f.corpus, 0o000);
  const shut = await runIngest(['walk', f.corpus, '--json'], env, { cwd: f.root, ...UNPRIVILEGED }).finally(() =>
    chmodSync(f.corpus, 0o755),
  );
  assert.is(shut.status, 3, shut.stderr.slice(-4000));
  const summary = JSON.parse(shut.stdout) as WalkSummary;
  assert.equal([summary.status, summary.items.seen, summary.items.removed], ['completed', 0, 0]);
  assert.equal(
    summary.warnings.map((w) => [w.name, w.message.split(';')[0]]),
    [['unlisted_directory', 'the corpus root: cannot read directory: EACCES']],
  );
  assert.match(shut.stderr, /^ingest: the walk completed without doing its job: it could list nothing of the corpus/m);
});

test.run();
