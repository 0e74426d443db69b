// @engine
// The scheduled walk (docs/behaviour/stages.md#boot-never-walks) as a container runs it: `ingest
// serve` in a child process with INGEST_WALK_SCHEDULE set walks on its own through its loopback
// POST /walk, and a tick that finds a walk running is logged and skipped, never queued. The model
// tier is the real mock on loopback, slowed so that one walk spans several ticks.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, ConfigError } from '../lib/config.ts';
import { startMockServer } from '../mock/server.ts';
import { BIN } from './helpers/cli.ts';
import { openTestDatabase } from './helpers/db.ts';

test('a schedule must be a cron expression, and needs the trigger secret it calls /walk with', () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(env);
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };
  assert.equal(problems({ INGEST_WALK_SCHEDULE: '*/5 * * * *', PIPELINE_TRIGGER_SECRET: 's' }), []);
  assert.equal(problems({ INGEST_WALK_SCHEDULE: '*/5 * * * * *', PIPELINE_TRIGGER_SECRET: 's' }), []);
  assert.match(
    problems({ INGEST_WALK_SCHEDULE: 'every minute', PIPELINE_TRIGGER_SECRET: 's' })[0]!,
    /not a cron expression/,
  );
  assert.match(problems({ INGEST_WALK_SCHEDULE: '* * * * *' })[0]!, /needs PIPELINE_TRIGGER_SECRET/);
  assert.is(loadConfig({}).walkSchedule, null, 'no schedule unless one is set');
});

test('ingest serve on a schedule walks on its own and skips the ticks that find a walk running', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-schedule-'));
  cpSync(path.resolve(import.meta.dirname, '..', 'examples', 'corpus'), path.join(root, 'corpus'), { recursive: true });
  const mock = await startMockServer({ latencyMs: 400 });
  const target = process.env.ENGINE_DB_DSN ? await openTestDatabase() : null;
  const serve = spawn(process.execPath, [BIN, 'serve', '--port', '0'], {
    env: {
      PATH: process.env.PATH ?? '',
      INGEST_DATA_DIR: path.join(root, 'data'),
      ENGINE_SOURCE_PATH: path.join(root, 'corpus'),
      PIPELINE_TRIGGER_SECRET: 'schedule-test',
      INGEST_WALK_SCHEDULE: '* * * * * *',
      INGEST_PRODUCER_AFTER_WALK: 'false',
      INGEST_LOG_LEVEL: 'info',
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'k',
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: 'k',
      ...(target?.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const messages: string[] = [];
  let pending = '';
  serve.stderr!.on('data', (chunk) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop()!;
    for (const line of lines) messages.push((JSON.parse(line) as { msg: string }).msg);
  });
  const count = (msg: string) => messages.filter((m) => m === msg).length;
  try {
    for (const end = Date.now() + 120_000; ;) {
      // Two scheduled walks, with skipped ticks between them: the first walk spans several ticks.
      if (count('scheduled walk started') >= 2 && count('scheduled walk skipped: a walk is running') >= 1) break;
      assert.ok(Date.now() < end, `not seen in two minutes: ${JSON.stringify(messages)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(messages.includes('walks scheduled'));
    assert.ok(mock.stats.messages > 0, 'the scheduled walk extracted through the model tier');
    assert.is(count('scheduled walk refused'), 0, JSON.stringify(messages));
  } finally {
    serve.kill('SIGTERM');
    await new Promise((resolve) => serve.once('exit', resolve));
    await mock.close();
    await target?.dispose();
    rmSync(root, { recursive: true, force: true });
  }
});

test.run();
