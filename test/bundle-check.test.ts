// @engine
// `ingest bundle check` on bundles made by hand: a conformant one passes; each breach of OKF 0.1
// (a concept without frontmatter or type, frontmatter in a non-root index, the root without its
// version stamp, a log out of order or with a bad date), an index that misses or invents an
// entry, a claim citing no citation, a citation of a forbidden target or of a missing row, is
// named with its file; the command exits 1 with the reasons, 0 on a conformant bundle, and says
// so plainly when no bundle is published yet.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { checkBundle } from '../stages/producer/check.ts';
import { runIngest } from './helpers/cli.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

let root: string;
let target: TestDatabase;
let documentId: string;

test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-bundle-check-'));
  target = await openTestDatabase();
  documentId = randomUUID();
  await target.db.query(
    `INSERT INTO source_documents (id, rel_path, content_sha256, byte_size, media_type, op_id)
     VALUES ($1, 'a.md', 'x', 1, 'text/markdown', $1)`,
    [documentId],
  );
});
test.after.each(async () => {
  await target.dispose();
  rmSync(root, { recursive: true, force: true });
});

const page = (id: string, extra = '') =>
  `---\ntype: Person\ntitle: Ada\ntimestamp: "2026-11-25T10:00:00.000+00:00"\n---\n\n# Ada\n\n- Ada wrote notes. [1]\n${extra}\n# Citations\n\n1. [A](record://source_document/${id}) (a.md)\n`;

async function bundle(files: Record<string, string>): Promise<string> {
  const dir = path.join(root, 'bundle');
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), text);
  }
  return dir;
}

const conformant = () => ({
  'index.md': '---\nokf_version: "0.1"\n---\n\n# Knowledge bundle\n\n* [people](people/) - 1 concept\n',
  'log.md': '# Bundle log\n\n## 2026-11-25\n* **Creation**: Ada.\n\n## 2026-11-20\n* **Creation**: none.\n',
  'people/index.md': '# people\n\n* [Ada](ada.md) - Ada.\n',
  'people/ada.md': page(documentId),
});

test('a conformant bundle passes, and counts what it holds', async () => {
  const result = await checkBundle(await bundle(conformant()), target.db);
  assert.equal(result.problems, []);
  assert.equal([result.files, result.concepts, result.citations], [4, 1, 1]);
});

test('each breach is named with its file', async () => {
  const files = {
    ...conformant(),
    'index.md': '# Knowledge bundle\n\n* [people](people/) - 1 concept\n* [gone](gone/) - 0\n',
    'log.md': '# Bundle log\n\n## 2026-11-20\n\n## 2026-11-25\n\n## 2026-13-45\n',
    'people/index.md': '---\ntype: Index\n---\n\n# people\n\n* [Ada](ada.md) - Ada.\n',
    'people/bob.md': '# Bob\n\nNo frontmatter.\n',
    'people/cy.md': '---\ntitle: Cy\n---\n\n# Cy\n',
    'people/dee.md': page(randomUUID(), '- Dee cites nothing. [4]\n'),
    'people/eve.md': page(documentId).replace('record://source_document/', 'record://content_chunk/'),
    'people/fay.md': '---\ntype: [unclosed\n---\n',
  };
  const { problems } = await checkBundle(await bundle(files), target.db);
  const said = (file: string, pattern: RegExp) =>
    assert.ok(
      problems.some((p) => p.file === file && pattern.test(p.problem)),
      `${file}: ${pattern} in ${JSON.stringify(problems)}`,
    );
  said('index.md', /must declare okf_version "0\.1"/);
  said('index.md', /lists gone\/, which does not exist/);
  said('log.md', /not newest first/);
  said('log.md', /2026-13-45/);
  said('people/index.md', /carries frontmatter/);
  said('people/index.md', /does not list bob\.md/);
  said('people/bob.md', /without a YAML frontmatter block/);
  said('people/cy.md', /no non-empty `type`/);
  said('people/dee.md', /cites \[4\], which is not among its citations/);
  said('people/dee.md', /cites record:\/\/source_document\/.*which does not exist/);
  said('people/eve.md', /content_chunk is not a citation target/);
  said('people/fay.md', /not valid YAML/);
});

test('`ingest bundle check` exits 1 naming the problems, then 0 once they are mended', async () => {
  const env: Record<string, string> = target.dsn
    ? { ENGINE_DB_DSN: target.dsn, INGEST_DATA_DIR: root }
    : { INGEST_DATA_DIR: path.join(root, 'data') };
  // No citations: the command's own database (an empty embedded one here, which `bundle check`
  // does not create: `db migrate` does) has nothing to resolve.
  if (!target.dsn) assert.is((await runIngest(['db', 'migrate'], env)).status, 0);
  const dir = await bundle({
    ...conformant(),
    'people/ada.md': '---\ntype: Person\n---\n\n# Ada\n',
    'people/bob.md': '# Bob\n',
  });
  const broken = await runIngest(['bundle', 'check', dir], env);
  assert.is(broken.status, 1, broken.stderr);
  assert.match(broken.stdout, /people\/bob\.md: a concept file without a YAML frontmatter block/);
  assert.match(broken.stdout, /people\/index\.md: does not list bob\.md/);
  await writeFile(path.join(dir, 'people', 'bob.md'), '---\ntype: Person\n---\n\n# Bob\n');
  await writeFile(path.join(dir, 'people', 'index.md'), '# people\n\n* [Ada](ada.md) - Ada.\n* [Bob](bob.md) - Bob.\n');
  const mended = await runIngest(['bundle', 'check', dir], env);
  assert.is(mended.status, 0, mended.stdout + mended.stderr);
  assert.match(mended.stdout, /conformant, every citation resolves/);
});

test('`ingest bundle check` with no bundle published yet says so, where it would be and how one is made', async () => {
  const env = { INGEST_DATA_DIR: path.join(root, 'data'), INGEST_BUNDLE_DIR: path.join(root, 'bundle-home') };
  const none = await runIngest(['bundle', 'check'], env);
  assert.is(none.status, 2, none.stderr);
  assert.match(none.stderr, /no knowledge bundle is published yet/);
  assert.ok(none.stderr.includes(path.join(root, 'bundle-home', 'current')), none.stderr);
  assert.match(none.stderr, /ingest produce/);
  assert.not.match(none.stderr, /ENOENT/);
  const json = await runIngest(['bundle', 'check', '--json'], env);
  assert.is(json.status, 2);
  assert.is((JSON.parse(json.stdout) as { error: string }).error, 'no_bundle');
});

test.run();
