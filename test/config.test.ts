// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { ConfigError, DEFAULT_EXTRACTION_MODEL, DEFAULT_PORT, loadConfig, SECRET_ENV_VARS } from '../lib/config.ts';
import { VARIABLES } from '../lib/config-table.ts';

const cwd = '/srv/app';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, cwd);
  } catch (error) {
    assert.instance(error, ConfigError);
    return [...(error as ConfigError).problems];
  }
  assert.unreachable('expected a ConfigError');
  return [];
}

test('an empty environment gives the embedded defaults', () => {
  const config = loadConfig({}, cwd);
  assert.is(config.database.dsn, null);
  assert.is(config.dataDir, path.join(cwd, '.ingest'));
  assert.is(config.database.embeddedDir, path.join(cwd, '.ingest', 'pglite'));
  assert.is(config.stateStorePath, path.join(cwd, '.ingest', 'state'));
  assert.is(config.sourcePath, null);
  assert.is(config.http.port, DEFAULT_PORT);
  assert.is(config.http.host, '127.0.0.1');
  assert.is(config.models.extraction, DEFAULT_EXTRACTION_MODEL);
  assert.is(config.models.producer, DEFAULT_EXTRACTION_MODEL);
  assert.is(config.secrets.pipelineTrigger, null);
  assert.equal(config.secretValues, []);
});

test('blank and whitespace-only values mean unset', () => {
  const config = loadConfig(
    {
      EXTRACTION_MODEL: '',
      PRODUCER_MODEL: '   ',
      ENGINE_SOURCE_PATH: '\t',
      ENGINE_DB_DSN: ' ',
      PIPELINE_TRIGGER_SECRET: '',
      INGEST_PORT: '',
    },
    cwd,
  );
  assert.is(config.models.extraction, DEFAULT_EXTRACTION_MODEL);
  assert.is(config.models.producer, DEFAULT_EXTRACTION_MODEL);
  assert.is(config.sourcePath, null);
  assert.is(config.database.dsn, null);
  assert.is(config.secrets.pipelineTrigger, null);
  assert.is(config.http.port, DEFAULT_PORT);
});

test('PRODUCER_MODEL falls back to EXTRACTION_MODEL, and wins when set', () => {
  assert.is(loadConfig({ EXTRACTION_MODEL: 'model-a' }, cwd).models.producer, 'model-a');
  const both = loadConfig({ EXTRACTION_MODEL: 'model-a', PRODUCER_MODEL: 'model-b' }, cwd);
  assert.is(both.models.extraction, 'model-a');
  assert.is(both.models.producer, 'model-b');
});

test('relative paths resolve against the working directory', () => {
  const config = loadConfig({ INGEST_DATA_DIR: 'data', ENGINE_SOURCE_PATH: 'corpus', ENGINE_DB: '/var/state' }, cwd);
  assert.is(config.dataDir, '/srv/app/data');
  assert.is(config.database.embeddedDir, '/srv/app/data/pglite');
  assert.is(config.sourcePath, '/srv/app/corpus');
  assert.is(config.stateStorePath, '/var/state');
});

test('a valid DSN is kept and its password joins the secrets', () => {
  const config = loadConfig({ ENGINE_DB_DSN: 'postgresql://app:s3cr%21et@db.internal:5432/platform' }, cwd);
  assert.is(config.database.dsn, 'postgresql://app:s3cr%21et@db.internal:5432/platform');
  assert.ok(config.secretValues.includes('s3cr!et'));
  assert.ok(config.secretValues.includes('s3cr%21et'));
});

test('a malformed DSN is a named error that does not echo the value', () => {
  for (const dsn of ['mysql://root:hunter22@db/x', 'not a url hunter22', 'host=db password=hunter22']) {
    const problems = problemsOf({ ENGINE_DB_DSN: dsn });
    assert.is(problems.length, 1);
    assert.match(problems[0]!, /ENGINE_DB_DSN/);
    assert.not.match(problems[0]!, /hunter22/);
  }
});

test('non-numeric and out-of-range knobs are named errors', () => {
  assert.match(problemsOf({ INGEST_PORT: '80a' })[0]!, /INGEST_PORT must be a whole number from 0 to 65535/);
  assert.match(problemsOf({ INGEST_PORT: '70000' })[0]!, /INGEST_PORT/);
  assert.match(problemsOf({ INGEST_SINK_BATCH_ROWS: '0' })[0]!, /INGEST_SINK_BATCH_ROWS/);
  assert.match(problemsOf({ INGEST_SINK_FLUSH_MS: '-5' })[0]!, /INGEST_SINK_FLUSH_MS/);
  assert.match(problemsOf({ INGEST_LOG_LEVEL: 'loud' })[0]!, /INGEST_LOG_LEVEL must be one of/);
});

test('every problem is reported at once', () => {
  const problems = problemsOf({
    INGEST_PORT: 'x',
    ENGINE_DB_DSN: 'ftp://x',
    INGEST_APP_URL: 'nope',
    INGEST_CORPUS_BUCKET: 'gs://b',
  });
  assert.is(problems.length, 4);
});

test('ENGINE_DB must be a path, not a connection string', () => {
  assert.match(problemsOf({ ENGINE_DB: 'postgresql://localhost/x' })[0]!, /ENGINE_DB is a filesystem path/);
});

test('bucket and app URLs accept only their schemes', () => {
  const config = loadConfig(
    { INGEST_CORPUS_BUCKET: 's3://corpus/prefix', INGEST_APP_URL: 'https://app.example/' },
    cwd,
  );
  assert.is(config.corpusBucket, 's3://corpus/prefix');
  assert.is(config.appUrl, 'https://app.example/');
  assert.match(problemsOf({ INGEST_CORPUS_BUCKET: 'http://bucket' })[0]!, /INGEST_CORPUS_BUCKET/);
});

test('the model endpoints must be http(s) URLs, named when not; blank stays legal (scrubbed)', () => {
  for (const name of ['ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL']) {
    assert.equal(problemsOf({ [name]: 'notaurl' }), [
      `${name} is not a valid URL (expected http(s)://host[:port][/path])`,
    ]);
    assert.equal(problemsOf({ [name]: 'ftp://gateway.example/' }).length, 1);
    for (const legal of ['https://gateway.example/v1', '  ']) loadConfig({ [name]: legal }, cwd);
  }
});

test('the fetch caps have documented defaults, the allowlist is off, and lists are parsed', () => {
  assert.equal(loadConfig({}, cwd).fetch, {
    maxBytes: 10 * 1024 * 1024,
    timeoutMs: 30_000,
    maxRedirects: 5,
    contentTypes: ['text/html', 'application/xhtml+xml'],
    allowCidrs: [],
  });
  const custom = loadConfig(
    { INGEST_FETCH_CONTENT_TYPES: 'Text/HTML, text/plain', INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32,::1/128' },
    cwd,
  );
  assert.equal(custom.fetch.contentTypes, ['text/html', 'text/plain']);
  assert.equal(custom.fetch.allowCidrs, ['127.0.0.1/32', '::1/128']);
  assert.equal(
    problemsOf({
      INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1',
      INGEST_FETCH_CONTENT_TYPES: 'html',
      INGEST_FETCH_MAX_REDIRECTS: '99',
    }),
    [
      'INGEST_FETCH_CONTENT_TYPES must be a comma-separated list of media types such as text/html',
      'INGEST_FETCH_ALLOW_CIDRS must be a comma-separated list of CIDR ranges such as 127.0.0.1/32',
      'INGEST_FETCH_MAX_REDIRECTS must be a whole number from 0 to 20',
    ],
  );
});

test('the config is frozen all the way down', () => {
  const config = loadConfig({}, cwd);
  assert.throws(() => {
    (config.http as { port: number }).port = 1;
  }, TypeError);
  assert.throws(() => {
    (config as { sourcePath: string | null }).sourcePath = '/tmp';
  }, TypeError);
  assert.ok(Object.isFrozen(config.secretValues));
});

test('secret values are collected from every credential variable', () => {
  const config = loadConfig(
    { PIPELINE_TRIGGER_SECRET: 'trigger-1234', ANTHROPIC_API_KEY: 'anthropic-key-5678', CRON_SECRET: 'cron-9999' },
    cwd,
  );
  assert.equal([...config.secretValues].sort(), ['anthropic-key-5678', 'cron-9999', 'trigger-1234']);
  assert.is(config.secrets.pipelineTrigger, 'trigger-1234');
});

test('every credential the service reads is in the variables table, marked secret, and only those', () => {
  const credential = /SECRET|_TOKEN$|API_KEY|PASSWORD/;
  const names = Object.keys(VARIABLES);
  assert.equal(
    names.filter((name) => credential.test(name)),
    [...SECRET_ENV_VARS],
    'marked exactly where the name says credential',
  );
  for (const name of ['CRON_SECRET', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'])
    assert.ok(SECRET_ENV_VARS.includes(name), name);
});

test.run();
