import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ChunkStream, chunkText, DEFAULT_MAX_CHARS, type Chunk, type ChunkOptions } from '../stages/chunk.ts';

/** Seeded generator so every run sees the same "random" texts. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

const ALPHABET = [
  'word',
  'mot',
  '字',
  '漢字',
  '😀',
  'e\u0301',
  'שלום',
  'مرحبا',
  '.',
  '!',
  ' ',
  ' ',
  ' ',
  '\n',
  '\n\n',
  '\t',
  '🇫🇷',
];
function randomText(seed: number, pieces: number): string {
  const r = rng(seed);
  let out = '';
  for (let i = 0; i < pieces; i++) out += ALPHABET[Math.floor(r() * ALPHABET.length)];
  return out;
}

function checkInvariants(text: string, chunks: Chunk[], max = DEFAULT_MAX_CHARS): void {
  chunks.forEach((c, i) => {
    assert.is(c.idx, i);
    assert.is(text.slice(c.charStart, c.charEnd), c.text);
    assert.ok(c.text.length <= max, `chunk ${i} is ${c.text.length} long`);
    assert.ok(/\S/.test(c.text), 'no whitespace-only chunk');
    const first = c.text.charCodeAt(0);
    const last = c.text.charCodeAt(c.text.length - 1);
    assert.not.ok(first >= 0xdc00 && first <= 0xdfff, 'starts inside a surrogate pair');
    assert.not.ok(last >= 0xd800 && last <= 0xdbff, 'ends inside a surrogate pair');
    if (i > 0) assert.ok(c.charStart >= chunks[i - 1]!.charEnd, 'chunks do not overlap');
  });
  // Nothing but whitespace is left out.
  const covered = chunks.map((c) => c.text).join('');
  assert.is(covered.replace(/\s/g, ''), text.replace(/\s/g, ''));
}

test('empty and whitespace-only text has no chunks', () => {
  for (const t of ['', '   ', '\n\n\t \u3000']) assert.equal(chunkText(t), []);
});

test('short text is one chunk, trimmed of surrounding whitespace', () => {
  assert.equal(chunkText('\n  Hello world.  \n'), [{ idx: 0, text: 'Hello world.', charStart: 3, charEnd: 15 }]);
});

test('paragraph breaks are preferred over line and sentence breaks', () => {
  const para = (n: number) => `${'Sentence one here. '.repeat(n).trim()}`;
  const text = `${para(40)}\n\n${para(40)}\n\n${para(40)}`;
  const chunks = chunkText(text);
  checkInvariants(text, chunks);
  assert.ok(chunks.length >= 3);
  assert.ok(
    chunks.every((c) => !c.text.includes('\n\n')),
    'each paragraph stands alone',
  );
});

test('a very long line without any break is cut at the maximum size', () => {
  const text = 'x'.repeat(1_000_000);
  const chunks = chunkText(text);
  assert.is(chunks.length, Math.ceil(1_000_000 / DEFAULT_MAX_CHARS));
  checkInvariants(text, chunks);
});

test('a hard cut never splits a surrogate pair', () => {
  const text = '😀'.repeat(5_000); // 10,000 code units, no break
  const chunks = chunkText(text, { targetChars: 999, maxChars: 999 });
  checkInvariants(text, chunks, 999);
  assert.ok(chunks.every((c) => c.text.length % 2 === 0));
});

test('random unicode texts keep every invariant', () => {
  for (let seed = 1; seed <= 40; seed++) {
    const text = randomText(seed, 200 + seed * 150);
    checkInvariants(text, chunkText(text, { targetChars: 300, maxChars: 500 }), 500);
  }
});

test('chunking is deterministic', () => {
  const text = randomText(7, 5_000);
  assert.equal(chunkText(text), chunkText(text));
});

test('an edit near the end leaves earlier chunks unchanged', () => {
  for (let seed = 1; seed <= 10; seed++) {
    const text = randomText(seed, 6_000);
    const before = chunkText(text, { targetChars: 400, maxChars: 600 });
    const edited = chunkText(`${text} and an appended closing sentence.`, { targetChars: 400, maxChars: 600 });
    // Chunks whose look-ahead window ended before the old end cannot see the edit.
    const stable = before.filter((c) => c.charStart + 600 < text.length);
    assert.ok(stable.length > 3);
    assert.equal(edited.slice(0, stable.length), stable);
  }
});

/** The chunks of `text` pushed to a ChunkStream in pieces of the sizes `sizes` gives, in turn. */
function chunkedInPieces(text: string, sizes: () => number, options?: ChunkOptions): Chunk[] {
  const stream = new ChunkStream(options);
  const chunks: Chunk[] = [];
  for (let start = 0; start < text.length;) {
    const end = start + sizes();
    chunks.push(...stream.push(text.slice(start, end)));
    start = end;
  }
  chunks.push(...stream.end());
  return chunks;
}

test('a text chunked as it arrives in pieces gives exactly the chunks of the whole text', () => {
  const long = (seed: number) =>
    `${randomText(seed, 3_000)}\n\n${'x'.repeat(5_000)}${'😀'.repeat(1_500)}\n \n \t${' '.repeat(3_000)}${randomText(seed + 1, 500)}  \n`;
  for (let seed = 1; seed <= 12; seed++) {
    const text = long(seed);
    const r = rng(seed);
    for (const options of [undefined, { targetChars: 300, maxChars: 500 }, { targetChars: 10_000, maxChars: 12_000 }]) {
      const whole = chunkText(text, options);
      assert.ok(whole.length > 1);
      // Pieces of one character (a surrogate pair split between two), small, and larger than a chunk.
      for (const sizes of [() => 1, () => 1 + Math.floor(r() * 40), () => 1 + Math.floor(r() * 30_000)])
        assert.equal(chunkedInPieces(text, sizes, options), whole, `seed ${seed}`);
    }
  }
  assert.equal(
    chunkedInPieces('  \n ', () => 1),
    [],
  );
});

test.run();
