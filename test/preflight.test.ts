import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FAILURE_SENTINEL, startMockServer, type MockServer } from '../mock/server.ts';
import { BIN, listeningUrl, runIngest } from './helpers/cli.ts';
import { serveGateway } from './helpers/loopback.ts';
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
  assert.match(result.stdout, /\nbatch API: served \(ingest prefill can buy here\)\n$/);
});

test('an endpoint without the batch API passes the preflight and is said not to serve ingest prefill', async () => {
  // A gateway that relays /v1/messages to the mock and nothing else.
  const gateway = await serveGateway(mock.url, (req) =>
    req.url === '/v1/messages' ? null : { status: 404, type: 'not_found_error', message: 'no route' },
  );
  try {
    const url = gateway.origin;
    const result = await preflight({ ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: 'any' });
    assert.is(result.status, 0, result.stderr);
    assert.match(result.stdout, /\nbatch API: not served \(ingest prefill refuses to run here\)\n$/);
  } finally {
    await gateway.close();
  }
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

test('with no model variable set, preflight says tier 1 runs the in-process mock and checks nothing', async () => {
  const result = await preflight({});
  assert.is(result.status, 0, result.stderr);
  assert.is(result.stdout, 'preflight ok: tier 1: the in-process mock, nothing to check\n');
});

test("with ANTHROPIC_BASE_URL and no credential, preflight checks that endpoint's /health", async () => {
  const alive = await preflight({ ANTHROPIC_BASE_URL: mock.url });
  assert.is(alive.status, 0, alive.stderr);
  assert.match(alive.stdout, new RegExp(`tier mock, no credential to check; ${mock.url}/health answered 200`));

  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise((resolve) => closed.close(resolve));
  const dead = await preflight({ ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_AUTH_TOKEN: '' });
  assert.is(dead.status, 1);
  assert.match(
    dead.stderr,
    new RegExp(`preflight failed \\(tier mock, no credential set\\): http://127.0.0.1:${port}/health did not answer`),
  );
});

test('ingest mock serves until told to stop', async () => {
  const child = spawn(process.execPath, [BIN, 'mock', '--port', '0'], { env: { PATH: process.env.PATH ?? '' } });
  const url = await listeningUrl(child);
  const health = await fetch(`${url}/health`);
  assert.is(health.status, 200);
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  child.kill('SIGTERM');
  assert.is(await exit, 0);
  assert.is(spawnSync(process.execPath, [BIN, 'mock', '--port', 'x'], { env: { PATH: process.env.PATH } }).status, 2);
});

test.run();
