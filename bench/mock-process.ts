// The mock model server in a process of its own, for the walk benchmarks: a real model API is
// not on the walk's event loop, and its CPU (vectors, JSON) should not be counted as the
// walk's, nor its memory in the walk's RSS.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export interface MockProcess {
  url: string;
  /** Model calls answered so far (messages and embedding requests). */
  calls(): Promise<number>;
  close(): Promise<void>;
}

const ingestBin = fileURLToPath(new URL('../bin/ingest.ts', import.meta.url));

export async function startMockProcess(latencyMs: number): Promise<MockProcess> {
  const child = spawn(process.execPath, [ingestBin, 'mock', '--port', '0', '--latency-ms', String(latencyMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, INGEST_LOG_LEVEL: 'silent' },
  });
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
  return {
    url,
    async calls() {
      const { stats } = (await (await fetch(`${url}/health`)).json()) as {
        stats: { messages: number; embeddings: number };
      };
      return stats.messages + stats.embeddings;
    },
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
