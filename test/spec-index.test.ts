// docs/ARCHITECTURE.md's behaviour index sends a reader from a behaviour to a file and a function:
// each file it names exists and declares each function it names there, so a move or a rename
// that forgets the index fails here.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const architecture = readFileSync(path.join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');
const index = architecture.slice(architecture.indexOf('## Behaviour index'));

/** Every `path/file.ts: name, Class.method / other` reference in the index's third column. */
export function references(markdown: string): { file: string; names: string[] }[] {
  const out: { file: string; names: string[] }[] = [];
  for (const row of markdown.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| ---'))) {
    const where = row.split('|')[3] ?? '';
    for (const part of where.split(';')) {
      const m = /([\w./-]+\.ts)(?::\s*([^(]*))?/.exec(part.trim());
      if (m === null) continue;
      const names = (m[2] ?? '')
        .split(/,|\//)
        .map((n) => n.trim())
        .filter((n) => /^[A-Za-z_][\w.]*$/.test(n));
      out.push({ file: m[1]!, names });
    }
  }
  return out;
}

test('the reader of the index: files and function names from a row', () => {
  assert.equal(references('| 3 | x | a/b.ts: one, Two.three; c/d.ts (a note); e/f.ts: g / h (why) |'), [
    { file: 'a/b.ts', names: ['one', 'Two.three'] },
    { file: 'c/d.ts', names: [] },
    { file: 'e/f.ts', names: ['g', 'h'] },
  ]);
});

test('every file and function the behaviour index names exists', () => {
  const refs = references(index);
  assert.ok(refs.length > 40, `the index was read (${refs.length} references)`);
  const missing: string[] = [];
  for (const { file, names } of refs) {
    const full = path.join(ROOT, file);
    if (!existsSync(full)) {
      missing.push(file);
      continue;
    }
    const source = readFileSync(full, 'utf8');
    for (const name of names) {
      const last = name.split('.').pop()!;
      if (
        !new RegExp(
          `\\b(?:function\\*?|class|const|let|interface|type)\\s+${last}\\b|^\\s+(?:async\\s+)?\\*?${last}\\s*[(:=]|\\b${last}\\s*[:=]\\s*(?:async\\s*)?\\(`,
          'm',
        ).test(source)
      ) {
        missing.push(`${file}: ${name}`);
      }
    }
  }
  assert.equal(missing, []);
});

test.run();
