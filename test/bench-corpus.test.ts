// The benchmark corpus generator: deterministic bytes, exact mix, streaming, real documents.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  buildDocument,
  CorpusMixError,
  DEFAULT_MIX,
  mixPattern,
  parseMix,
  relPathOf,
  trueEntities,
  type CorpusType,
} from '../bench/corpus/generate.ts';
import { corpusFiles, renderDocument, type CorpusFile } from '../bench/corpus/render.ts';
import { entities } from '../mock/extractors.ts';
import { names } from '../mock/names.ts';
import { createConverter, mediaTypeFor } from '../stages/convert/index.ts';

const ALL_TYPES = parseMix('md:1,pdf:1,docx:1,xlsx:1,html:1');

async function take(n: number, files: AsyncGenerator<CorpusFile>): Promise<CorpusFile[]> {
  const out: CorpusFile[] = [];
  for await (const f of files) {
    out.push(f);
    if (out.length === n) break;
  }
  return out;
}

const digest = (files: CorpusFile[]) => {
  const hash = createHash('sha256');
  for (const f of files) hash.update(f.relPath).update(f.bytes);
  return hash.digest('hex');
};

test('the same seed gives the same bytes for every type; another seed gives another corpus', async () => {
  const first = await take(10, corpusFiles({ docs: 10, mix: ALL_TYPES, seed: 42 }));
  // A second run later in time: the zip and PDF libraries stamp clocks that must not leak in.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const again = await take(10, corpusFiles({ docs: 10, mix: ALL_TYPES, seed: 42 }));
  assert.equal(new Set(first.map((f) => f.type)), new Set(['md', 'pdf', 'docx', 'xlsx', 'html']));
  assert.is(digest(again), digest(first));
  const other = await take(10, corpusFiles({ docs: 10, mix: ALL_TYPES, seed: 43 }));
  for (const [i, f] of other.entries())
    assert.not.equal(f.bytes, first[i]!.bytes, `${f.relPath} differs with the seed`);
});

test('the mix is exact per period and evenly interleaved', () => {
  const pattern = mixPattern(parseMix('md:70,pdf:10,docx:10,xlsx:5,html:5'));
  assert.is(pattern.length, 20, 'weights are reduced by their common divisor');
  const count = (type: CorpusType) => pattern.filter((t) => t === type).length;
  assert.equal([count('md'), count('pdf'), count('docx'), count('xlsx'), count('html')], [14, 2, 2, 1, 1]);
  assert.ok(!pattern.join(',').includes('md,md,md,md'), 'no long run of one type');
  assert.equal(mixPattern(parseMix('md:0,pdf:3')), ['pdf']);
});

test('a malformed mix is a named error', () => {
  for (const bad of ['md:70,txt:30', 'md:x', 'md:1.5', 'md', 'md:0,pdf:0', '']) {
    assert.throws(
      () => parseMix(bad),
      (e: unknown) => e instanceof CorpusMixError,
      bad,
    );
  }
});

test('it streams: a billion-document corpus yields its first files at once, each rebuildable on its own', async () => {
  const started = Date.now();
  const files = await take(
    3,
    corpusFiles({ docs: 1_000_000_000, mix: parseMix('md:70,pdf:10,docx:10,xlsx:5,html:5'), seed: 9 }),
  );
  assert.ok(Date.now() - started < 10_000, 'only the files asked for were built');
  const third = files[2]!;
  assert.is(third.relPath, relPathOf(2, third.type));
  assert.equal(await renderDocument(buildDocument(9, 2, third.type)), third.bytes);
});

test('names recur across documents and Q&A sections are written as the extractor reads them', async () => {
  const files = await take(40, corpusFiles({ docs: 40, mix: parseMix('md:1'), seed: 3 }));
  const texts = files.map((f) => f.bytes.toString('utf8'));
  const byName = new Map<string, number>();
  for (const text of texts) {
    for (const name of new Set(text.match(/\b(?:Ada|Grace|Alan) [A-Z][a-z]+\b/g) ?? []))
      byName.set(name, (byName.get(name) ?? 0) + 1);
  }
  assert.ok(Math.max(...byName.values()) >= 10, 'some person appears in at least a quarter of the documents');
  assert.ok(
    texts.some((t) => /^Q: .+\nA: \S/m.test(t)),
    'answered pairs',
  );
});

test('every generated type converts through the real converters', async () => {
  const converter = createConverter({ workers: 1 });
  try {
    for (const file of await take(5, corpusFiles({ docs: 5, mix: ALL_TYPES, seed: 5 }))) {
      const converted = await converter.convert(file.bytes, mediaTypeFor(file.relPath)!);
      assert.ok(converted.text.length > 200, `${file.relPath} has text`);
      if (file.type === 'xlsx') assert.match(converted.text, /Quantity/, 'the table header of a sheet');
    }
  } finally {
    await converter.close();
  }
});

test('ingest bench corpus writes N files and refuses a bad mix with exit 2', () => {
  const out = mkdtempSync(path.join(tmpdir(), 'ingest-corpus-test-'));
  try {
    const bin = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');
    const run = (args: string[]) =>
      spawnSync(process.execPath, [bin, 'bench', 'corpus', ...args], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { PATH: process.env.PATH ?? '' },
      });
    const ok = run(['--docs', '12', '--seed', '4', out]);
    assert.is(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /corpus of 12 documents/);
    const written = readdirSync(path.join(out, 'part-0000')).sort();
    assert.is(written.length, 12);
    assert.is(written.filter((f) => f.endsWith('.md')).length, 8, 'md:70 of 12, rounded by the interleave');
    assert.ok(readFileSync(path.join(out, 'part-0000', written[0]!)).length > 0);
    const bad = run(['--docs', '3', '--mix', 'md:1,exe:1', out]);
    assert.is(bad.status, 2);
    assert.match(bad.stderr, /unknown document type "exe"/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

const DEFAULT_PATTERN = mixPattern(parseMix(DEFAULT_MIX));
const SAMPLE = Array.from({ length: 300 }, (_, i) => buildDocument(1, i, DEFAULT_PATTERN[i % DEFAULT_PATTERN.length]!));
const OCCURRENCES = SAMPLE.flatMap((doc) => doc.entities);
const ALIASES = OCCURRENCES.filter((o) => o.surface !== o.entity);

test('about a quarter of the entity occurrences are aliases, of every kind', () => {
  const share = ALIASES.length / OCCURRENCES.length;
  assert.ok(share >= 0.15 && share <= 0.4, `alias share ${share.toFixed(3)}`);
  const kinds = new Set(
    ALIASES.map((o) => {
      if (/ (Ltd|Inc)$/.test(o.surface)) return 'legal suffix';
      if (/ Corp$/.test(o.surface)) return 'Corp for Company';
      const typoIn = o.surface.split(' ')[0] === o.entity.split(' ')[0] ? 'second' : 'first';
      return `${o.type} typo in the ${typoIn} word`;
    }),
  );
  assert.equal(
    kinds,
    new Set([
      'legal suffix',
      'Corp for Company',
      'organization typo in the first word',
      'person typo in the first word',
      'person typo in the second word',
    ]),
  );
});

test('the occurrences are exactly the names written: in the text as the mock reads them, and in table cells', async () => {
  for (const doc of SAMPLE) {
    // Every type renders its title, sections and Q&A as the markdown does, tables aside.
    const markdown = (await renderDocument({ ...doc, type: 'md' })).toString('utf8');
    const read = names(markdown);
    const cells = doc.tables.flatMap((t) => t.rows.flatMap((row) => [String(row[1]), String(row[2])]));
    assert.equal([...read, ...cells].sort(), doc.entities.map((o) => o.surface).sort(), `document ${doc.index}`);
  }
});

test('every surface is one whole name to the mock extractor, of its true type', () => {
  for (const { surface, type } of new Map(OCCURRENCES.map((o) => [o.surface, o])).values()) {
    assert.equal(names(surface), [surface]);
    assert.is(entities(surface).entities[0]!.type, type, surface);
  }
});

test("an alias names one true entity only and is never another entity's canonical name", () => {
  const canonical = new Map(trueEntities().map((e) => [e.entity, e.type]));
  const entityOf = new Map<string, string>();
  for (const o of OCCURRENCES) {
    assert.is(canonical.get(o.entity), o.type, o.entity);
    if (o.surface !== o.entity) assert.not.ok(canonical.has(o.surface), `${o.surface} (for ${o.entity})`);
    assert.is(entityOf.get(o.surface) ?? o.entity, o.entity, o.surface);
    entityOf.set(o.surface, o.entity);
  }
});

test('the same seed and index give the same document and occurrences; another seed others', () => {
  const first = SAMPLE.slice(0, 20);
  for (const doc of first) assert.equal(buildDocument(1, doc.index, doc.type), doc);
  const placed = first.map((doc) => doc.entities);
  const reseeded = first.map((doc) => buildDocument(2, doc.index, doc.type).entities);
  assert.not.equal(reseeded, placed);
});

test.run();
