// Which test files each run takes, by what the files declare rather than by what their text
// happens to mention (README.md "Tests").

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The first line of a test file that reaches the engine under test: the database the run targets
 * (ENGINE_DB_DSN, test/helpers/db.ts, test/helpers/walk.ts). `npm run test:pg` runs only these;
 * the others hold no database or always start the embedded PGlite, and `npm test` runs them.
 */
export const ENGINE_MARKER = '// @engine';

/** Test files that run in a CI step of their own (.ci/run), never in the suites. */
export const OWN_STEP_FILES: readonly string[] = ['image-install.test.ts', 'database-restart.test.ts'];

/** Every test file under root, relative to it, with its source. */
export function testFiles(root: string): { name: string; source: string }[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => ({ name, source: readFileSync(path.join(root, name), 'utf8') }));
}

export function isEngineTest(source: string): boolean {
  return source.split('\n', 1)[0]!.trimEnd() === ENGINE_MARKER;
}
