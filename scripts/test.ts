// Runs the uvu suite and ends with the plain line "N passed, N failed" that CI counts.
// Arguments pass through to uvu (a directory and a file pattern); without a pattern, the files
// of OWN_STEP_FILES are left to their own CI step.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isEngineTest, OWN_STEP_FILES, testFiles } from './test-files.ts';

// uvu's package exports do not include its CLI, so it is addressed by path.
const uvuBin = fileURLToPath(new URL('../node_modules/uvu/bin.js', import.meta.url));
const args = process.argv.slice(2);
const [dir, pattern] = args.length > 0 ? args : ['test', undefined];
const uvuArgs = [
  dir!,
  pattern ?? '\\.test\\.ts$',
  ...ignored(dir!).flatMap((name) => ['--ignore', `^${name.replace(/[.]/g, '\\.')}$`]),
  ...(process.stdout.isTTY ? [] : ['--no-color']),
];

/**
 * The files this run leaves out: on PostgreSQL (ENGINE_DB_DSN set) those without the engine
 * marker, which the PGlite suite runs; in a whole suite (no pattern) those of their own CI step.
 */
function ignored(root: string): string[] {
  const files = testFiles(root);
  return [
    ...(process.env.ENGINE_DB_DSN ? files.filter((file) => !isEngineTest(file.source)).map((file) => file.name) : []),
    ...(pattern === undefined ? OWN_STEP_FILES : []),
  ];
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
