// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { bindArraysInBinary } from '../lib/db/array-params.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase();
});
test.after.each(async () => {
  await t.dispose();
});

const AWKWARD = ['', 'NULL', 'plain', 'a,b', '{braces}', 'quote"d', 'back\\slash', 'tab\tnew\nline', 'ünï 𝄞 ✓', null];

test('an array cast to its type at every use goes in binary; any other stays as pg sends it', () => {
  const ids = [randomUUID(), null];
  const sql =
    'SELECT $1::text[], $2::uuid[], $3::int[], $4::bigint[], $5, $6::text[], $6, $7::TEXT[], $7::text[], $8::text[]';
  const bound = bindArraysInBinary(sql, [['a'], ids, [1, -2], [2 ** 40], ['no cast'], ['mixed'], ['x'], []]);
  assert.ok([0, 1, 2, 3, 6].every((i) => Buffer.isBuffer(bound[i])));
  assert.equal([bound[4], bound[5], bound[7]], [['no cast'], ['mixed'], []]);
  // Elements pg would print its own way, or that the binary form does not read, keep pg's literal.
  const kept = [[1], ['{' + randomUUID() + '}'], ['1'], [1.5]];
  assert.equal(bindArraysInBinary('SELECT $1::text[], $2::uuid[], $3::int[], $4::bigint[]', kept), kept);
});

test('the database reads the same values from a binary array as from the text literal', async () => {
  const ids = [randomUUID(), randomUUID().toUpperCase(), randomUUID().replace(/-/g, ''), null];
  const { rows } = await t.db.query<{ text: string | null; id: string | null; n: number | null; big: string | null }>(
    `SELECT text, id::text, n, big::text FROM unnest($1::text[], $2::uuid[], $3::int[], $4::bigint[]) AS u(text, id, n, big)`,
    [AWKWARD, ids, [0, -1, 2 ** 31 - 1, null], [2 ** 53 - 1, -(2 ** 40), null]],
  );
  assert.equal(
    rows.map((r) => r.text),
    AWKWARD,
  );
  assert.equal(
    rows.map((r) => r.id),
    [
      ...ids.map((id) =>
        id === null ? null : id.toLowerCase().replace(/^(.{8})-?(.{4})-?(.{4})-?(.{4})-?/, '$1-$2-$3-$4-'),
      ),
      ...Array(AWKWARD.length - ids.length).fill(null),
    ],
  );
  assert.equal(
    rows.map((r) => r.n),
    [0, -1, 2 ** 31 - 1, ...Array(AWKWARD.length - 3).fill(null)],
  );
  assert.equal(
    rows.map((r) => r.big),
    [String(2 ** 53 - 1), String(-(2 ** 40)), ...Array(AWKWARD.length - 2).fill(null)],
  );
});

test.run();
