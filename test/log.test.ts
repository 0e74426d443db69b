// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../lib/config.ts';
import { createLogger, lineScrubber } from '../lib/log.ts';

function capture(env: Record<string, string>) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const log = createLogger(loadConfig(env, '/'), { destination });
  return { log, lines, text: () => lines.join('\n') };
}

const env = {
  PIPELINE_TRIGGER_SECRET: 'trig-Zq81xRv0PpLk',
  EXTRACT_API_TOKEN: 'extr-"quoted"\\slash',
  ANTHROPIC_API_KEY: 'anthropic-key-AbCdEf123456',
  OPENAI_API_KEY: 'openai-key-987654XyZ',
  ENGINE_DB_DSN: 'postgresql://ingest:pg-pass-7777@127.0.0.1:5432/platform',
};
const secrets = [
  'trig-Zq81xRv0PpLk',
  'extr-"quoted"\\slash',
  'extr-\\"quoted\\"\\\\slash',
  'anthropic-key-AbCdEf123456',
  'openai-key-987654XyZ',
  'pg-pass-7777',
];

test('secrets set in the environment never appear in a log line, wherever they are logged', () => {
  const { log, lines, text } = capture(env);
  log.info(`calling model with key ${env.ANTHROPIC_API_KEY}`);
  log.info({ request: { headers: { authorization: `Bearer ${env.PIPELINE_TRIGGER_SECRET}` } } }, 'inbound');
  log.info({ note: `token=${env.EXTRACT_API_TOKEN}` }, 'nested value under an innocent key');
  log.info({ apiKey: env.OPENAI_API_KEY, dsn: env.ENGINE_DB_DSN }, 'connecting');
  log.error({ err: new Error(`auth failed for ${env.OPENAI_API_KEY} at ${env.ENGINE_DB_DSN}`) }, 'boom');
  log.warn({ list: [env.PIPELINE_TRIGGER_SECRET, { deep: { deeper: env.ANTHROPIC_API_KEY } }] }, 'arrays too');
  assert.is(lines.length, 6);
  for (const secret of secrets) assert.not.ok(text().includes(secret), `leaked ${secret}`);
  for (const line of lines) JSON.parse(line); // still valid JSON after scrubbing
  assert.ok(text().includes('[REDACTED]'));
  assert.ok(text().includes('127.0.0.1:5432/platform'), 'the DSN stays readable without its password');
});

test('bearer tokens and URL passwords are scrubbed even when not configured as secrets', () => {
  const { log, text } = capture({});
  log.info('header was Bearer abc.def.ghi and upstream https://user:p4ss@host/x');
  assert.not.ok(text().includes('abc.def.ghi'));
  assert.not.ok(text().includes('p4ss'));
  assert.ok(text().includes('https://user:[REDACTED]@host/x'));
});

test('very short secrets are left alone rather than shredding every line', () => {
  const scrub = lineScrubber(['ab']);
  assert.is(scrub('{"msg":"about"}'), '{"msg":"about"}');
});

test('a real process that fails to connect does not print the DSN password', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ingest-log-'));
  const bin = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');
  const result = spawnSync(process.execPath, [bin, 'db', 'migrate'], {
    env: {
      PATH: process.env.PATH,
      INGEST_DATA_DIR: dataDir,
      // Port 1 on loopback: refused at once, so the error path runs with the secret in hand.
      ENGINE_DB_DSN: 'postgresql://ingest:pg-pass-7777@127.0.0.1:1/platform',
      PIPELINE_TRIGGER_SECRET: env.PIPELINE_TRIGGER_SECRET,
    },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.is(result.status, 1);
  const output = result.stdout + result.stderr;
  assert.match(output, /cannot connect to PostgreSQL/);
  assert.not.ok(output.includes('pg-pass-7777'));
  assert.not.ok(output.includes(env.PIPELINE_TRIGGER_SECRET));
});

test.run();
