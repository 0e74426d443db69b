// Runs the real `ingest` CLI in a child process. Asynchronous on purpose: spawnSync would block
// this process's event loop, and with it any server the test runs in process (the mock, a trap).

import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chmodSync, lchownSync, readdirSync } from 'node:fs';
import path from 'node:path';

export const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'ingest.ts');

/**
 * The user a test runs `ingest` as when permissions must hold: root reads any folder whatever
 * its mode, so as root it is nobody; anyone else runs it as themselves (null).
 */
export const UNPRIVILEGED = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;

/** Hands `dir` and everything under it to UNPRIVILEGED (nothing to do when that is the caller). */
export function giveToUnprivileged(dir: string): void {
  if (UNPRIVILEGED === null) return;
  chmodSync(dir, 0o755);
  for (const entry of ['', ...readdirSync(dir, { recursive: true, encoding: 'utf8' })])
    lchownSync(path.join(dir, entry), UNPRIVILEGED.uid, UNPRIVILEGED.gid);
}

/** `as` runs it in another directory or as another user (a test that needs permissions to hold, as root they never do). */
export function runIngest(
  args: string[],
  env: Record<string, string>,
  as: Pick<SpawnOptions, 'cwd' | 'uid' | 'gid'> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { ...as, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Runs `ingest ARGS` and SIGKILLs it `afterMs` after its stderr first matches `line` (a log
 * record it prints at the instant to aim at); resolves once it is gone, saying whether the kill
 * is what ended it.
 */
export function killedIngest(
  args: string[],
  env: Record<string, string>,
  line: RegExp,
  afterMs: number,
): Promise<{ killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let output = '';
    let armed = false;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      output += chunk;
      if (!armed && line.test(output)) {
        armed = true;
        setTimeout(() => child.kill('SIGKILL'), afterMs);
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ killed: code === null && signal === 'SIGKILL' }));
  });
}

/** The URL a child `ingest` server prints once it listens ("... on http://127.0.0.1:PORT"). */
export function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    child.stdout!.on('data', (c) => {
      out += c;
      const match = /on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve(match[1]!);
    });
  });
}
