import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DigestSet } from '../engine/walk/digest-set.ts';

test('every string added is present after the set has grown many times over', () => {
  const set = new DigestSet();
  const added = Array.from({ length: 50_000 }, (_, i) => `file:corpus/md/${i % 97}/document-${i}.md`);
  for (const value of added) set.add(value);
  assert.is(set.size, added.length);
  assert.ok(added.every((value) => set.has(value)));
});

test('strings not added are absent, including near neighbours of those added', () => {
  const set = new DigestSet();
  const ids = Array.from({ length: 20_000 }, () => randomUUID());
  for (const id of ids) set.add(id);
  const others = [
    ...Array.from({ length: 20_000 }, () => randomUUID()),
    ...ids.map((id) => id.replaceAll('-', '_')),
    ...ids.slice(0, 1000).map((id) => `${id} `),
    '',
  ];
  assert.is(others.filter((value) => set.has(value)).length, 0);
});

test('adding a string twice counts it once; strings that differ only past ASCII stay apart', () => {
  const set = new DigestSet();
  set.add('file:café.md').add('file:café.md').add('file:cafe\u0301.md');
  assert.is(set.size, 2);
  assert.ok(set.has('file:café.md'));
  assert.ok(set.has('file:cafe\u0301.md'));
  assert.not.ok(set.has('file:cafe.md'));
  set.add('');
  assert.ok(set.has(''));
  assert.is(set.size, 3);
});

test.run();
