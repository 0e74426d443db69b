// The walk writes rows only (docs/behaviour/stages.md#rows-only): DDL lives in schema/ and is
// issued only by the migration runner. This scans every runtime module for schema-changing
// statements.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const RUNTIME_DIRS = ['bin', 'cli', 'http', 'engine', 'stages', 'lib', 'mock', 'worker'];
// schema-shape.ts reads the migrations' DDL to know what they leave behind; it sends none.
const ALLOWED = new Set(['lib/db/migrate.ts', 'lib/db/schema-shape.ts']);
// Session-local staging (CREATE TEMP TABLE) is not matched: it changes no platform schema.
const DDL =
  /\b(?:CREATE|ALTER|DROP)\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+)?(?:TABLE|INDEX|EXTENSION|SCHEMA|FUNCTION|PROCEDURE|VIEW|MATERIALIZED\s+VIEW|TYPE|TRIGGER|SEQUENCE|DATABASE|ROLE|POLICY|DOMAIN)\b|\bTRUNCATE\b/i;

export function findDdl(source: string): string[] {
  return source.split('\n').filter((line) => DDL.test(line));
}

async function* runtimeFiles(dir: string): AsyncGenerator<string> {
  let entries;
  try {
    entries = await readdir(path.join(ROOT, dir), { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* runtimeFiles(rel);
    else if (entry.name.endsWith('.ts')) yield rel;
  }
}

test('the scanner recognises DDL and leaves row statements and temp staging alone', () => {
  for (const ddl of [
    'CREATE TABLE x (id int)',
    'alter table t add column c int',
    'DROP INDEX i',
    'create or replace function f()',
    'CREATE UNIQUE INDEX u ON t (c)',
    'TRUNCATE source_documents',
    'CREATE EXTENSION vector',
  ]) {
    assert.equal(findDdl(ddl), [ddl], ddl);
  }
  for (const dml of [
    'INSERT INTO t VALUES (1)',
    'DELETE FROM t WHERE id = $1',
    'CREATE TEMP TABLE IF NOT EXISTS s (LIKE t)',
    'UPDATE t SET dropped = true',
    "SELECT 'created'",
  ]) {
    assert.equal(findDdl(dml), [], dml);
  }
});

test('no runtime module outside the migration runner issues CREATE/ALTER/DROP', async () => {
  const offenders: string[] = [];
  let scanned = 0;
  for (const dir of RUNTIME_DIRS) {
    for await (const rel of runtimeFiles(dir)) {
      scanned += 1;
      if (ALLOWED.has(rel)) continue;
      for (const line of findDdl(await readFile(path.join(ROOT, rel), 'utf8')))
        offenders.push(`${rel}: ${line.trim()}`);
    }
  }
  assert.ok(scanned > 5, 'the scan found the runtime modules');
  assert.equal(offenders, []);
});

test.run();
