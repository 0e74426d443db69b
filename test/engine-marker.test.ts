// The engine marker (scripts/test-files.ts) is what sends a test file to the PostgreSQL suite:
// a file that reaches the database the run targets without it would pass there untested.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENGINE_MARKER, isEngineTest, testFiles } from '../scripts/test-files.ts';

/** The ways a test reaches the engine under test: the target's DSN and the helpers that open it. */
const REACHES_ENGINE = /ENGINE_DB_DSN|openTestDatabase|walkFixture/;

test('the marker is read from the first line only', () => {
  assert.ok(isEngineTest(`${ENGINE_MARKER}\n// a walk on the target engine\n`));
  assert.not.ok(isEngineTest(`// a walk on the target engine\n${ENGINE_MARKER}\n`));
  assert.not.ok(isEngineTest(`${ENGINE_MARKER}-free\n`));
});

test('every test file that reaches the engine under test carries the marker', () => {
  const files = testFiles(import.meta.dirname);
  assert.ok(files.length > 50, `found the test files (${files.length})`);
  const unmarked = files
    .filter((file) => file.name !== 'engine-marker.test.ts')
    .filter((file) => REACHES_ENGINE.test(file.source) && !isEngineTest(file.source))
    .map((file) => file.name);
  assert.equal(unmarked, []);
});

test.run();
