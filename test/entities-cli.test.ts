// @engine
// `ingest entities list | show | merge` as an operator runs them: the real CLI in child
// processes, after a real `ingest walk` on the mock tier.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN } from './helpers/corpus.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';

let root: string;
let target: TestDatabase | null = null;
let env: Record<string, string>;

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-entities-cli-'));
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  const docs = {
    'a.md': '# a\n\nNorthwind Traders signed the lease.\n',
    'b.md': '# b\n\nNortwind Traders paid the rent.\n',
    'c.md': '# c\n\nWestfield Holdings Group shipped the goods.\n',
  };
  for (const [name, text] of Object.entries(docs)) await writeFile(path.join(corpus, name), text);
  env = { INGEST_DATA_DIR: path.join(root, 'data') };
  await seedDataDir(env.INGEST_DATA_DIR!);
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    env.ENGINE_DB_DSN = target.dsn!;
  }
  assert.is(ingest(['walk', corpus]).status, 0);
});
test.after(async () => {
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

function ingest(args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'error', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const json = <T>(args: string[]): T => {
  const result = ingest([...args, '--json']);
  assert.is(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as T;
};

interface Listed {
  canonical_name: string;
  mentions: number;
  pinned: boolean;
  mention: string;
}

test('list shows the resolved entities; show names what chains under one; merge pins the survivors', () => {
  const listed = json<Listed[]>(['entities', 'list']);
  const northwind = listed.find((e) => e.canonical_name === 'Northwind Traders');
  assert.equal([northwind?.mentions, northwind?.pinned], [2, false], 'the typo chained under the root');
  assert.not.ok(listed.some((e) => e.canonical_name === 'Nortwind Traders'));
  assert.equal(json<Listed[]>(['entities', 'list', '--pinned']), []);

  const shown = json<{ names: string[]; mentions: { owner: string; surface_form: string }[] }>([
    'entities',
    'show',
    mentionOf('Northwind Traders'),
  ]);
  assert.equal(shown.names, ['Northwind Traders', 'Nortwind Traders']);
  assert.equal(
    shown.mentions.map((m) => [m.owner, m.surface_form]),
    [
      ['a.md', 'Northwind Traders'],
      ['b.md', 'Nortwind Traders'],
    ],
  );

  const merged = ingest([
    'entities',
    'merge',
    '--into',
    mentionOf('Northwind Traders'),
    mentionOf('Westfield Holdings Group'),
  ]);
  assert.is(merged.status, 0, merged.stderr);
  assert.equal(JSON.parse(merged.stdout), { merged: 1, mentions_pinned: 3 });
  assert.equal(
    json<Listed[]>(['entities', 'list', '--pinned']).map((e) => [e.canonical_name, e.mentions]),
    [['Northwind Traders', 3]],
  );
});

/** A mention id of the entity named `name`, as the list gives it. */
function mentionOf(name: string): string {
  const entity = json<Listed[]>(['entities', 'list']).find((e) => e.canonical_name === name);
  assert.ok(entity !== undefined, `${name} is listed`);
  return entity.mention;
}

test('usage mistakes exit 2 with the usage line', () => {
  const merge = ingest(['entities', 'merge', 'some-id']);
  assert.is(merge.status, 2);
  assert.match(merge.stderr, /usage: ingest entities merge --into/);
  assert.is(ingest(['entities', 'list', '--limit', '0']).status, 2);
  const unknown = ingest(['entities', 'show', '00000000-0000-4000-8000-000000000000']);
  assert.is(unknown.status, 1);
  assert.match(
    unknown.stderr,
    /^ingest: no entity mention 00000000-0000-4000-8000-000000000000 \(a mention moved .* takes a new id/,
  );
});

test.run();
