// The mock model server in a process of its own, for the walk benchmarks: a real model API is
// not on the walk's event loop, and its CPU (vectors, JSON) should not be counted as the
// walk's, nor its memory in the walk's RSS.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { MockStats } from '../mock/server.ts';

export interface MockProcess {
  url: string;
  /** Model calls answered so far (messages and embedding requests). */
  calls(): Promise<number>;
  /** The mock's counters (mock/server.ts MockStats). */
  stats(): Promise<MockStats>;
  close(): Promise<void>;
}

const ingestBin = fileURLToPath(new URL('../bin/ingest.ts', import.meta.url));

/** `flags`: more of `ingest mock`'s (its batches' knobs, say). */
export async function startMockProcess(latencyMs: number, flags: readonly string[] = []): Promise<MockProcess> {
  const child = spawn(
    process.execPath,
    [ingestBin, 'mock', '--port', '0', '--latency-ms', String(latencyMs), ...flags],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, INGEST_LOG_LEVEL: 'silent' },
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      const found = /mock model server on (http:\/\/\S+)/.exec(out);
      if (found) resolve(found[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the mock model server exited with ${code} before listening`)));
  });
  const stats = async () => ((await (await fetch(`${url}/health`)).json()) as { stats: MockStats }).stats;
  return {
    url,
    stats,
    async calls() {
      const { messages, embeddings } = await stats();
      return messages + embeddings;
    },
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
