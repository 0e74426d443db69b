// Runs the uvu suite and ends with the plain line "N passed, N failed" that CI counts.
// Arguments pass through to uvu (a directory and a file pattern).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// uvu's package exports do not include its CLI, so it is addressed by path.
const uvuBin = fileURLToPath(new URL('../node_modules/uvu/bin.js', import.meta.url));
const args = process.argv.slice(2);
const [dir, pattern] = args.length > 0 ? args : ['test', '\\.test\\.ts$'];
const uvuArgs = [
  dir!,
  ...(pattern === undefined ? [] : [pattern]),
  ...engineFreeFiles(dir!).flatMap((name) => ['--ignore', `^${name.replace(/[.]/g, '\\.')}$`]),
  ...(process.stdout.isTTY ? [] : ['--no-color']),
];

/**
 * On PostgreSQL (ENGINE_DB_DSN set), the test files that never reach the engine under test: a
 * file naming none of the ways in (ENGINE_DB_DSN, openTestDatabase, walkFixture) tests code
 * that holds no database, or always starts the embedded PGlite, and the PGlite suite runs it.
 */
function engineFreeFiles(root: string): string[] {
  if (!process.env.ENGINE_DB_DSN) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .filter((name) => !/ENGINE_DB_DSN|openTestDatabase|walkFixture/.test(readFileSync(path.join(root, name), 'utf8')));
}

const child = spawn(process.execPath, [uvuBin, ...uvuArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
let output = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk: string) => {
  output += chunk;
  process.stdout.write(chunk);
});

child.on('close', (code, signal) => {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? NaN);
  const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? NaN);
  const skipped = Number(/Skipped:\s+(\d+)/.exec(plain)?.[1] ?? 0);
  const crashed = Number.isNaN(total) || Number.isNaN(passed);
  // A crash before uvu's summary still has to read as a failure, never as "0 failed".
  const failed = crashed ? 1 : total - passed - skipped;
  const line = `${crashed ? 0 : passed} passed, ${failed} failed` + (skipped > 0 ? `, ${skipped} skipped` : '');
  process.stdout.write(`\n${line}\n`);
  process.exitCode = code === 0 && failed === 0 && !signal ? 0 : 1;
});
