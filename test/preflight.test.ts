import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { FAILURE_SENTINEL, startMockServer, type MockServer } from '../mock/server.ts';
import { BIN, runIngest } from './helpers/cli.ts';
let mock: MockServer;
test.before(async () => {
  mock = await startMockServer();
});
test.after(() => mock.close());

const preflight = (env: Record<string, string>) => runIngest(['preflight'], env);

test('preflight passes against a live endpoint and names the tier and identity', async () => {
  const result = await preflight({
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'any',
    EXTRACTION_MODEL: 'model-x',
  });
  assert.is(result.status, 0, result.stderr);
  assert.match(result.stdout, new RegExp(`preflight ok: tier mock, ${mock.url}:model-x, answered "pong"`));
});

test('a dead key fails the preflight with a clear message and a non-zero exit', async () => {
  const result = await preflight({ ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: FAILURE_SENTINEL });
  assert.is(result.status, 1);
  assert.match(result.stderr, /preflight failed against .* \(tier mock\): HTTP 401/);
});

test('an unreachable endpoint fails the preflight', async () => {
  const result = await preflight({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:1', ANTHROPIC_API_KEY: 'k' });
  assert.is(result.status, 1);
  assert.match(result.stderr, /preflight failed/);
});

test('ingest mock serves until told to stop', async () => {
  const child = spawn(process.execPath, [BIN, 'mock', '--port', '0'], { env: { PATH: process.env.PATH ?? '' } });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const match = /on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve(match[1]!);
    });
  });
  const health = await fetch(`${url}/health`);
  assert.is(health.status, 200);
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  child.kill('SIGTERM');
  assert.is(await exit, 0);
  assert.is(spawnSync(process.execPath, [BIN, 'mock', '--port', 'x'], { env: { PATH: process.env.PATH } }).status, 2);
});

test.run();
