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

/**
 * How long each test file took, import included: uvu prints a file's name as it starts and its
 * count "(passed / total)" as it ends, one file after another. The slowest are listed at the end,
 * for whoever shortens the suite.
 */
class FileTimes {
  readonly #times: { file: string; ms: number }[] = [];
  #file = '';
  #since = performance.now();
  #partial = '';

  take(chunk: string): void {
    const lines = (this.#partial + chunk.replace(/\x1b\[[0-9;]*m/g, '')).split('\n');
    this.#partial = lines.pop()!;
    for (const line of lines) {
      if (/^\S+\.test\.ts$/.test(line.trim())) this.#file = line.trim();
      if (/\(\d+ \/ \d+\)\s*$/.test(line)) {
        const now = performance.now();
        this.#times.push({ file: this.#file, ms: now - this.#since });
        this.#since = now;
      }
    }
  }

  slowest(count: number): string {
    return [...this.#times]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, count)
      .map(({ file, ms }) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`)
      .join('\n');
  }
}

const child = spawn(process.execPath, [uvuBin, ...uvuArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
let output = '';
const fileTimes = new FileTimes();
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk: string) => {
  output += chunk;
  fileTimes.take(chunk);
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
  process.stdout.write(`\nthe slowest test files:\n${fileTimes.slowest(10)}\n\n${line}\n`);
  process.exitCode = code === 0 && failed === 0 && !signal ? 0 : 1;
});
