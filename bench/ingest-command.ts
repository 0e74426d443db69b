// An `ingest` command run as a process of its own by a benchmark, as an operator runs it.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/ingest.ts', import.meta.url));

/** Runs `ingest` with `argv` in `env` alone; resolves with its stdout once it exits 0, else throws. */
export async function runIngest(argv: readonly string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...argv], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`ingest ${argv[0]} exited with ${code}`);
  return out;
}
