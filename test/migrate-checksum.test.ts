// The migration checksum's text: what a comment edit may change without changing it, and what
// it keeps byte for byte because PostgreSQL reads it as data.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadMigrations } from '../lib/db/migrate.ts';
import { RELEASED_FILE_CHECKSUMS } from '../lib/db/released-checksums.ts';
import { sqlWithoutComments } from '../lib/db/sql-without-comments.ts';

test('comments and whitespace between tokens are dropped', () => {
  const sql = `-- a heading
CREATE TABLE t (   -- trailing note
  id int /* a block /* nested */ still the block */ PRIMARY KEY,\r
\tname text
);--last`;
  assert.is(sqlWithoutComments(sql), 'CREATE TABLE t ( id int PRIMARY KEY, name text );');
});

test('a comment between two tokens still separates them', () => {
  assert.is(sqlWithoutComments('SELECT/* x */1--y\nFROM t'), 'SELECT 1 FROM t');
});

test('comment marks and whitespace inside literals, quoted identifiers and dollar bodies are data', () => {
  for (const kept of [
    "'a -- b /* c */  d'",
    "'it''s -- here'",
    "E'\\' -- still the string'",
    '"col -- name"',
    '$$ SELECT 1; -- in the body\n  /* too */ $$',
    '$fn$ SELECT $$ -- $$ $fn$',
  ]) {
    assert.is(sqlWithoutComments(kept), kept);
  }
  assert.is(sqlWithoutComments("e'\\\\' -- after the string"), "e'\\\\'", 'an escaped backslash escapes no quote');
});

test("a backslash ends nothing in a standard string, and only a lone E makes an E'' string", () => {
  assert.is(sqlWithoutComments("'a\\' -- comment"), "'a\\'");
  assert.is(sqlWithoutComments("type'a\\' -- comment"), "type'a\\'");
});

test('a dollar sign inside an identifier opens no body', () => {
  assert.is(sqlWithoutComments('SELECT a$x$ -- note\nFROM t'), 'SELECT a$x$ FROM t');
  assert.is(sqlWithoutComments('SELECT $1 -- note\n'), 'SELECT $1');
});

test('a change inside a literal is a change, whitespace included', () => {
  assert.is.not(sqlWithoutComments("SELECT 'a  b'"), sqlWithoutComments("SELECT 'a b'"));
  assert.is.not(sqlWithoutComments('AS $$ SELECT  1 $$'), sqlWithoutComments('AS $$ SELECT 1 $$'));
});

test('every released migration still has the SQL it was released with', async () => {
  const migrations = await loadMigrations();
  for (const [version, released] of RELEASED_FILE_CHECKSUMS) {
    const migration = migrations.find((m) => m.version === version);
    assert.ok(migration, `migration ${version} is gone`);
    assert.is(migration.checksum, released.sql, `the SQL of ${migration.name} changed after its release`);
  }
});

test.run();
