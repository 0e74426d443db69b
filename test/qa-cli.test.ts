// @engine
// `ingest qa proposals | decide` as an operator runs them: the real CLI in child processes,
// after a real `ingest walk` on the mock tier, and a decision that the next walks keep.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runIngest } from './helpers/cli.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';

let root: string;
let corpus: string;
let target: TestDatabase | null = null;
let env: Record<string, string>;

const ANSWER = 'Book it in the travel portal and attach the approval email from your manager.';

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-qa-cli-'));
  corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  const docs = {
    'a.md': `# a\n\nQ: How do I book a train ticket?\nA: ${ANSWER}\n`,
    'b.md': `# b\n\nQ: Where can train tickets be booked?\nA: ${ANSWER}\n`,
    'c.md': `# c\n\nQ: How do I book a train ticket?\nA: ${ANSWER}\n\nQ: Is lunch provided?\nA: Yes, at noon.\n`,
  };
  for (const [name, text] of Object.entries(docs)) await writeFile(path.join(corpus, name), text);
  env = { INGEST_DATA_DIR: path.join(root, 'data') };
  await seedDataDir(env.INGEST_DATA_DIR!);
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    env.ENGINE_DB_DSN = target.dsn!;
  }
  const walked = await ingest(['walk', corpus]);
  assert.is(walked.status, 0, walked.stderr);
});
test.after(async () => {
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const ingest = (args: string[]) => runIngest(args, { INGEST_LOG_LEVEL: 'error', ...env });

interface Side {
  document: string;
  question: string;
  answer: string;
}
interface Listed {
  id: string;
  status: string;
  similarity: number;
  a: Side;
  b: Side;
}

const json = async <T>(args: string[]): Promise<T> => {
  const result = await ingest([...args, '--json']);
  assert.is(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as T;
};

const documents = (p: Listed) => [p.a.document, p.b.document].sort().join(' ~ ');

test('proposals lists both pairs side by side; decide records a decision the next walk keeps', async () => {
  const listed = await json<Listed[]>(['qa', 'proposals']);
  assert.equal(listed.map(documents).sort(), ['a.md ~ b.md', 'a.md ~ c.md', 'b.md ~ c.md']);
  assert.equal(listed[0]!.similarity, 1, 'the exact repeat first');
  assert.equal(documents(listed[0]!), 'a.md ~ c.md');
  for (const p of listed) assert.equal([p.a.answer, p.b.answer], [ANSWER, ANSWER]);

  const text = await ingest(['qa', 'proposals']);
  assert.is(text.status, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`${listed[0]!.id}  proposed  similarity 1.000`));
  assert.match(text.stdout, /Q: How do I book a train ticket\? +\| Q: How do I book a train ticket\?/);

  const rejected = listed.find((p) => documents(p) === 'a.md ~ b.md')!;
  const decided = await ingest(['qa', 'decide', rejected.id, 'reject']);
  assert.is(decided.status, 0, decided.stderr);
  assert.equal(JSON.parse(decided.stdout), { id: rejected.id, before: 'proposed', status: 'rejected' });
  assert.equal(
    (await json<Listed[]>(['qa', 'proposals', '--status', 'rejected'])).map((p) => p.id),
    [rejected.id],
  );

  const again = await ingest(['walk', corpus, '--full-reprocess']);
  assert.is(again.status, 0, again.stderr);
  assert.equal(
    (await json<Listed[]>(['qa', 'proposals', '--status', 'rejected'])).map((p) => p.id),
    [rejected.id],
    'rejected stays rejected after full_reprocess',
  );
  assert.is((await json<Listed[]>(['qa', 'proposals', '--status', 'proposed'])).length, 2);
  assert.equal(await json<Listed[]>(['qa', 'proposals', '--status', 'accepted']), []);
});

test('an unknown proposal exits 1 naming it; usage mistakes exit 2 with the usage line', async () => {
  const unknown = await ingest(['qa', 'decide', '00000000-0000-4000-8000-000000000000', 'accept']);
  assert.equal(
    [unknown.status, unknown.stderr.trim()],
    [1, 'ingest: no Q&A dedup proposal 00000000-0000-4000-8000-000000000000'],
  );
  const garbage = await ingest(['qa', 'decide', 'not-an-id', 'accept']);
  assert.equal([garbage.status, garbage.stderr.trim()], [1, 'ingest: no Q&A dedup proposal not-an-id']);
  const word = await ingest(['qa', 'decide', '00000000-0000-4000-8000-000000000000', 'merge']);
  assert.is(word.status, 2);
  assert.match(word.stderr, /usage: ingest qa decide <proposal id> accept\|reject/);
  const status = await ingest(['qa', 'proposals', '--status', 'maybe']);
  assert.is(status.status, 2);
  assert.match(status.stderr, /--status must be one of proposed, accepted, rejected/);
});

test.run();
