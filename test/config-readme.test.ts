// README.md's environment table is the one rendered from the variables' table: a variable added,
// renamed or given another default in lib/config-table.ts without `npm run env-table` fails here.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { environmentTable, tableIn, withEnvironmentTable } from '../lib/config-readme.ts';
import { VARIABLES } from '../lib/config-table.ts';

const README = readFileSync(path.join(import.meta.dirname, '..', 'README.md'), 'utf8');

test("README.md's environment table is the rendered one (npm run env-table writes it)", () => {
  assert.equal(tableIn(README)?.lines, environmentTable());
});

test('the rendered table has a row per variable, and rendering replaces the table only', () => {
  assert.is(environmentTable().length, 2 + Object.keys(VARIABLES).length);
  const stale = ['# Title', '', ...environmentTable().slice(0, 3), '| `GONE` | x | y |', '', 'After.'].join('\n');
  const fresh = withEnvironmentTable(stale).split('\n');
  assert.equal(fresh.slice(0, 2), ['# Title', '']);
  assert.equal(fresh.slice(2, -2), environmentTable());
  assert.equal(fresh.slice(-2), ['', 'After.']);
});

test.run();
