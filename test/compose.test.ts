// @engine
// The compose files, which cannot run here (no Docker engine): parsed, interpolated as compose
// interpolates them against a deploy environment, and checked for what the deployment relies
// on: the services, one image for all roles, ports on loopback only, the model tier each deploy
// environment selects, the volumes for the corpus and the state store, knobs that exist, and walk
// workers that can be scaled.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { helpText } from '../cli/main.ts';
import { llmTier } from '../lib/llm/client.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

interface Service {
  image?: string;
  build?: { context: string; args: Record<string, string> };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, unknown>;
  profiles?: string[];
  container_name?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
}

/** Compose's interpolation of one value: ${VAR}, ${VAR:-default} (blank or unset), ${VAR:?error}. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, arg?: string) => {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (kind === '?') throw new Error(`required variable ${name} is missing: ${arg}`);
    return kind === '-' ? arg! : '';
  });
}

/** Compose interpolates the parsed file's string values, so `KEY: ${VAR:-}` is a blank string. */
function interpolateValues(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === 'string') return interpolate(value, env);
  if (Array.isArray(value)) return value.map((item) => interpolateValues(item, env));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateValues(v, env)]));
  return value;
}

function load(file: string, env: Record<string, string>): ComposeFile {
  const parsed: unknown = parse(readFileSync(path.join(ROOT, file), 'utf8'), { merge: true });
  return interpolateValues(parsed, env) as ComposeFile;
}

/** The image's environment defaults (its ENV lines), which the compose files build on. */
const imageEnv: Record<string, string> = Object.fromEntries(
  [
    ...readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')
      .replace(/\\\n/g, ' ')
      .matchAll(/(\w+)=(\S+)/g),
  ].map(([, name, value]) => [name!, value!]),
);
/** The variables the README documents (its environment table), plus the SDKs' credentials. */
const documented = new Set([
  ...[
    ...readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/^\| `([A-Z_0-9]+)`(?:, `([A-Z_0-9]+)`)*/gm),
  ].flatMap((m) => m[0].match(/[A-Z][A-Z_0-9]+/g)!),
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
]);

/** The tier a service's clients select: blank values count as unset, as the clients scrub them. */
function tierOf(service: Service): string {
  const set = Object.fromEntries(Object.entries(service.environment ?? {}).filter(([, v]) => v !== ''));
  return llmTier(set);
}

const required = {
  IMAGE_SHA: 'abc123',
  POSTGRES_PASSWORD: 'pw',
  PIPELINE_TRIGGER_SECRET: 's',
  ENGINE_DB_DSN: 'postgresql://u:p@db:5432/x',
};

function checkCommon(compose: ComposeFile, roles: string[]) {
  const commands = helpText();
  const images = new Set(roles.map((role) => compose.services[role]!.image));
  assert.is(images.size, 1, 'every role runs the one image');
  assert.match([...images][0]!, /:abc123$/, 'the image is tagged with IMAGE_SHA');
  for (const role of roles) {
    const service = compose.services[role]!;
    const name = service.command!.slice(0, 1).join(' ');
    assert.ok(commands.includes(`ingest ${name}`), `${role} runs an ingest command: ${name}`);
    for (const port of service.ports ?? [])
      assert.match(port, /^127\.0\.0\.1:/, `${role} publishes ${port} on loopback only`);
    for (const variable of Object.keys(service.environment ?? {}))
      assert.ok(documented.has(variable), `${role} sets ${variable}, which the README does not document`);
  }
  const sidecar = compose.services.sidecar!;
  assert.equal(sidecar.command, ['serve']);
  const mounts = Object.fromEntries(sidecar.volumes!.map((v) => v.split(':').reverse().slice(-2)));
  assert.ok(compose.volumes[mounts[imageEnv.INGEST_DATA_DIR!]!] !== undefined, 'the state store is a named volume');
  assert.ok(compose.volumes[mounts[imageEnv.ENGINE_SOURCE_PATH!]!] !== undefined, 'the corpus is a named volume');
  assert.equal(compose.services['bid-worker']!.command, ['worker']);
  assert.equal(compose.services['bid-worker']!.healthcheck!.test.slice(-2), ['worker', 'health']);
  assert.is(compose.services['bid-worker']!.ports, undefined, 'the bid-worker has no HTTP server');
  checkWalkWorkers(compose);
}

/** The walk workers: off by default, scalable, and in the mode the sidecar walks in when the deploy asks. */
function checkWalkWorkers(compose: ComposeFile) {
  const worker = compose.services['walk-worker']!;
  assert.equal(worker.command, ['walk-worker']);
  assert.equal(worker.profiles, ['distributed'], 'started only with the distributed profile');
  assert.is(worker.container_name, undefined, 'no container name: it can be scaled');
  assert.is(worker.ports, undefined, 'no published port: it can be scaled');
  assert.equal(worker.healthcheck!.test.slice(-2), ['walk-worker', 'health']);
  assert.ok(
    worker.volumes!.some((v) => v.endsWith(`:${imageEnv.ENGINE_SOURCE_PATH}:ro`)),
    'the corpus, read-only, where the image looks for it',
  );
  for (const role of ['sidecar', 'walk-worker']) {
    const env = compose.services[role]!.environment!;
    assert.is(env.INGEST_WALK_MODE, '', `${role}: in-process unless the deploy environment says distributed`);
    assert.equal(env.ENGINE_DB_DSN, compose.services.sidecar!.environment!.ENGINE_DB_DSN, 'one database for both');
  }
}

/** Loaded with a distributed deploy environment, the coordinator and its workers agree. */
function checkDistributed(file: string) {
  const compose = load(file, { ...required, INGEST_WALK_MODE: 'distributed', INGEST_STATE_STORE: 'database' });
  for (const role of ['sidecar', 'walk-worker']) {
    const env = compose.services[role]!.environment!;
    assert.is(env.INGEST_WALK_MODE, 'distributed', role);
    assert.is(env.INGEST_STATE_STORE, 'database', role);
  }
}

test('staging: sidecar, bid-worker and mock from one image, PostgreSQL with pgvector, models at the mock', () => {
  const compose = load('compose.staging.yaml', required);
  assert.equal(Object.keys(compose.services).sort(), ['bid-worker', 'mock', 'postgres', 'sidecar', 'walk-worker']);
  checkCommon(compose, ['sidecar', 'bid-worker', 'walk-worker', 'mock']);
  checkDistributed('compose.staging.yaml');
  assert.is(compose.services.sidecar!.build!.args.IMAGE_SHA, 'abc123');
  const mock = compose.services.mock!;
  assert.is(mock.ports, undefined, 'the mock publishes no port');
  const mockPort = mock.command![mock.command!.indexOf('--port') + 1];
  assert.is(mock.command![mock.command!.indexOf('--host') + 1], '0.0.0.0', 'its siblings can reach the mock');
  for (const role of ['sidecar', 'bid-worker', 'walk-worker']) {
    const service = compose.services[role]!;
    assert.is(service.environment!.ANTHROPIC_BASE_URL, `http://mock:${mockPort}`);
    assert.is(service.environment!.OPENAI_BASE_URL, `http://mock:${mockPort}/v1`);
    assert.is(tierOf(service), 'mock');
    assert.match(service.environment!.ENGINE_DB_DSN!, /@postgres:5432\//);
    assert.ok(service.depends_on!.mock !== undefined && service.depends_on!.postgres !== undefined);
  }
  assert.match(compose.services.postgres!.image!, /^pgvector\/pgvector:[\d.]+-pg\d+$/);

  const gateway = load('compose.staging.yaml', {
    ...required,
    ANTHROPIC_BASE_URL: 'https://gateway.invalid',
    ANTHROPIC_AUTH_TOKEN: 'token',
  });
  assert.is(tierOf(gateway.services.sidecar!), 'gateway', 'the deploy environment selects the gateway');
  assert.throws(() => load('compose.staging.yaml', { ...required, IMAGE_SHA: '' }), /IMAGE_SHA/);
});

test('production: no mock, the base URL unset unless the deploy environment sets it', () => {
  const compose = load('compose.production.yaml', required);
  assert.equal(Object.keys(compose.services).sort(), ['bid-worker', 'sidecar', 'walk-worker']);
  checkCommon(compose, ['sidecar', 'bid-worker', 'walk-worker']);
  checkDistributed('compose.production.yaml');
  for (const role of ['sidecar', 'bid-worker']) {
    const service = compose.services[role]!;
    assert.is(service.environment!.ANTHROPIC_BASE_URL, '', 'blank, which the client scrubs to unset');
    assert.is(service.environment!.ENGINE_DB_DSN, required.ENGINE_DB_DSN);
    assert.is(tierOf(service), 'vendor');
  }
  const raw = readFileSync(path.join(ROOT, 'compose.production.yaml'), 'utf8');
  for (const variable of ['ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_API_KEY'])
    assert.ok(raw.includes(`${variable}: \${${variable}:-}`), `${variable} passes through with \${VAR:-}`);

  const gateway = load('compose.production.yaml', {
    ...required,
    ANTHROPIC_BASE_URL: 'https://gateway.invalid',
    ANTHROPIC_AUTH_TOKEN: 'token',
  });
  for (const role of ['sidecar', 'bid-worker']) assert.is(tierOf(gateway.services[role]!), 'gateway');
  assert.throws(() => load('compose.production.yaml', { ...required, ENGINE_DB_DSN: '' }), /ENGINE_DB_DSN/);
});

test.run();
