// @engine
// Byte-identical copies and document identity, as a property: any sequence of copy, edit,
// rename, delete and re-copy on a handful of files, walked after each step, ends with each
// live file's content present exactly once (one document with rows per distinct content, whose
// rel_path names a live file holding it), nothing else holding derived rows, and every file's
// memo resolving to its content's document. Random sequences, a new seed each run (fast-check
// prints the seed and the shrunk sequence of a failure).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { walk } from '../engine/walk/walk.ts';
import { sha256Hex } from '../lib/hash.ts';
import { markdown, walkFixture, type WalkFixture } from './helpers/walk.ts';

const FILES = ['a.md', 'b.md', 'sub/c.md'] as const;
const CONTENTS = ['Alpha', 'Beta', 'Gamma'].map((title, i) => markdown(title, 2 + i));

type File = (typeof FILES)[number];
type Op =
  | { kind: 'write'; file: File; content: number }
  | { kind: 'copy'; from: File; to: File }
  | { kind: 'rename'; from: File; to: File }
  | { kind: 'delete'; file: File };

const file = fc.constantFrom(...FILES);
// Copies and edits weigh more: the faults live where a copy and an edit meet.
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      file,
      content: fc.integer({ min: 0, max: CONTENTS.length - 1 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('copy' as const), from: file, to: file }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rename' as const), from: file, to: file }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), file }) },
);

/** Applies one operation to the corpus and to the model of it (file -> content index). */
async function apply(corpus: string, model: Map<File, number>, step: Op): Promise<void> {
  const at = (name: File) => path.join(corpus, name);
  await mkdir(path.join(corpus, 'sub'), { recursive: true });
  if (step.kind === 'write') {
    await writeFile(at(step.file), CONTENTS[step.content]!);
    model.set(step.file, step.content);
  } else if (step.kind === 'delete') {
    if (!model.has(step.file)) return;
    await rm(at(step.file));
    model.delete(step.file);
  } else {
    const content = model.get(step.from);
    if (content === undefined || step.from === step.to) return;
    if (step.kind === 'copy') await copyFile(at(step.from), at(step.to));
    else {
      await rename(at(step.from), at(step.to));
      model.delete(step.from);
    }
    model.set(step.to, content);
  }
}

interface DocumentRow {
  id: string;
  sha: string;
  relPath: string;
  chunks: number;
  mentions: number;
}

async function documents(f: WalkFixture): Promise<DocumentRow[]> {
  const { rows } = await f.target.db.query<DocumentRow>(
    `SELECT d.id::text AS id, d.content_sha256 AS sha, d.rel_path AS "relPath",
            (SELECT count(*)::int FROM content_chunks c WHERE c.source_document_id = d.id) AS chunks,
            (SELECT count(*)::int FROM entity_mentions m WHERE m.source_document_id = d.id) AS mentions
       FROM source_documents d ORDER BY d.id`,
  );
  return rows;
}

/** The invariant after every walk; `chunksOf` learns each content's chunk count the first time it lands. */
async function check(f: WalkFixture, model: Map<File, number>, chunksOf: Map<string, number>): Promise<void> {
  const shaOf = (content: number) => sha256Hex(CONTENTS[content]!);
  const live = new Map<string, File[]>();
  for (const [name, content] of model) live.set(shaOf(content), [...(live.get(shaOf(content)) ?? []), name]);
  const withRows = (await documents(f)).filter((d) => d.chunks > 0 || d.mentions > 0);
  assert.equal(withRows.map((d) => d.sha).sort(), [...live.keys()].sort(), 'one document with rows per live content');
  for (const doc of withRows) {
    assert.ok(live.get(doc.sha)!.includes(doc.relPath as File), `${doc.relPath} names a live file holding its content`);
    chunksOf.set(doc.sha, chunksOf.get(doc.sha) ?? doc.chunks);
    assert.is(doc.chunks, chunksOf.get(doc.sha), `all of ${doc.relPath}'s chunks, once`);
  }
  for (const [name, content] of model) {
    const memo = (await f.lifespan.store.getItem(`file:${name}`)).memo;
    const owner = withRows.find((d) => d.sha === shaOf(content));
    assert.is(memo?.sourceDocumentId, owner?.id, `${name} resolves to its content's document`);
  }
}

test('every sequence of copy, edit, rename, delete and re-copy leaves each live content exactly once', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
      const f = await walkFixture();
      try {
        const model = new Map<File, number>();
        const chunksOf = new Map<string, number>();
        for (const step of ops) {
          await apply(f.corpus, model, step);
          const summary = await walk(f.lifespan, { sourcePath: f.corpus, allowMassRemoval: true });
          assert.equal([summary.status, summary.items.failed], ['completed', 0]);
          await check(f, model, chunksOf);
        }
      } finally {
        await f.dispose();
      }
    }),
    { numRuns: 40 },
  );
});

test('the reported case: two copies, one edited, keep both contents; the copy named on the row deleted moves rel_path', async () => {
  const f = await walkFixture();
  try {
    const model = new Map<File, number>();
    const chunksOf = new Map<string, number>();
    for (const step of [
      { kind: 'write', file: 'a.md', content: 0 },
      { kind: 'copy', from: 'a.md', to: 'b.md' },
      { kind: 'write', file: 'a.md', content: 1 },
      { kind: 'write', file: 'a.md', content: 0 },
      { kind: 'delete', file: 'a.md' },
    ] as Op[]) {
      await apply(f.corpus, model, step);
      await walk(f.lifespan, { sourcePath: f.corpus, allowMassRemoval: true });
      await check(f, model, chunksOf);
    }
  } finally {
    await f.dispose();
  }
});

test.run();
