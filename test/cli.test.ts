// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DATA_DIR_CREATORS } from '../cli/main.ts';
import { loadMigrations } from '../lib/db/migrate.ts';
import { WALK_V8_FLAGS } from '../lib/v8-flags.ts';
import { openTestDatabase } from './helpers/db.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');

/** A bound on a stuck command, not a speed check: a first PGlite initdb on a loaded machine takes over a minute. */
const SPAWN_TIMEOUT_MS = 300_000;

function ingest(args: string[], env: Record<string, string>, input?: Uint8Array, cwd?: string) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    input,
    cwd,
    timeout: SPAWN_TIMEOUT_MS,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('bin/ingest.ts runs as a program of its own, started with the walk heap flags', () => {
  const launch = readFileSync(BIN, 'utf8').split('\n')[1]!;
  assert.match(launch, /^\/\/bin\/true; exec .*\/node24" /);
  assert.ok(launch.includes(` ${WALK_V8_FLAGS.join(' ')} "$0" "$@"`), launch);
  const result = spawnSync(BIN, ['--help'], {
    env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` },
    encoding: 'utf8',
    timeout: SPAWN_TIMEOUT_MS,
  });
  assert.is(result.status, 0, result.stderr);
  assert.match(result.stdout, /usage: ingest/);
});

/** A directory holding a `node` that says it is Node 20, first on PATH. */
function oldNodeOnPath(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-old-node-'));
  writeFileSync(path.join(dir, 'node'), '#!/bin/sh\necho v20.20.2\n', { mode: 0o755 });
  return dir;
}

test("with an older node on PATH, bin/ingest.ts runs on the project's own Node 24", () => {
  const old = oldNodeOnPath();
  const result = spawnSync(BIN, ['--help'], {
    env: { PATH: `${old}:/usr/bin:/bin` },
    encoding: 'utf8',
    timeout: SPAWN_TIMEOUT_MS,
  });
  rmSync(old, { recursive: true, force: true });
  assert.is(result.status, 0, result.stderr);
  assert.match(result.stdout, /usage: ingest/);
});

test('with an older node and no project Node, bin/ingest.ts says plainly which Node it needs', () => {
  const old = oldNodeOnPath();
  const checkout = mkdtempSync(path.join(tmpdir(), 'ingest-no-modules-'));
  mkdirSync(path.join(checkout, 'bin'));
  for (const file of ['ingest.ts', 'node24'])
    cpSync(path.join(path.dirname(BIN), file), path.join(checkout, 'bin', file));
  const result = spawnSync(path.join(checkout, 'bin', 'ingest.ts'), ['--help'], {
    env: { PATH: `${old}:/usr/bin:/bin` },
    encoding: 'utf8',
    timeout: SPAWN_TIMEOUT_MS,
  });
  rmSync(old, { recursive: true, force: true });
  rmSync(checkout, { recursive: true, force: true });
  assert.is(result.status, 2);
  assert.match(result.stderr, /needs Node\.js 24\.11 or later; the node on PATH is v20\.20\.2/);
  assert.match(result.stderr, /npm ci/);
  assert.not.match(result.stderr, /ERR_UNKNOWN_FILE_EXTENSION|at /);
});

test('--help lists the commands that exist', () => {
  const result = ingest(['--help'], {});
  assert.is(result.status, 0);
  assert.match(result.stdout, /ingest db migrate/);
});

/** The modules a run of the CLI resolved (test/helpers/record-modules.ts). */
function modulesLoadedBy(args: string[]): string[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-modules-'));
  try {
    const out = path.join(dir, 'modules.json');
    const recorder = path.resolve(import.meta.dirname, 'helpers', 'record-modules.ts');
    const result = spawnSync(process.execPath, ['--import', recorder, BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', INGEST_RECORD_MODULES_TO: out },
      encoding: 'utf8',
      timeout: SPAWN_TIMEOUT_MS,
    });
    assert.is(result.status, 0, result.stderr);
    return (JSON.parse(readFileSync(out, 'utf8')) as { modules: string[] }).modules;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const HEAVY =
  /\/node_modules\/(pg|pg-copy-streams|@electric-sql\/pglite[^/]*|lmdb|pdf-parse|pdfjs-dist|mammoth|exceljs|jszip|yauzl|piscina|@anthropic-ai\/sdk|openai)\//;

test('--help, alone or for a command group, loads none of the database, store, converter or model libraries', () => {
  for (const args of [['--help'], ['jobs', '--help'], ['walk', '--help']]) {
    const modules = modulesLoadedBy(args);
    assert.ok(
      modules.some((m) => m.endsWith('/cli/main.ts')),
      'the recorder saw the CLI start',
    );
    assert.equal(
      modules.filter((m) => HEAVY.test(m)),
      [],
      `ingest ${args.join(' ')}`,
    );
  }
});

test('a command group with --help lists its subcommands; alone, it names them and exits 2', () => {
  const jobs = ingest(['jobs', '--help'], {});
  assert.is(jobs.status, 0, jobs.stderr);
  for (const sub of ['enqueue', 'list', 'show', 'retry', 'schema'])
    assert.match(jobs.stdout, new RegExp(`ingest jobs ${sub}`));
  assert.not.match(jobs.stdout, /ingest walk/);
  for (const [group, sub] of [
    ['db', 'migrate'],
    ['qa', 'decide'],
    ['entities', 'merge'],
    ['state', 'reset'],
    ['bundle', 'check'],
  ]) {
    const result = ingest([group!, '--help'], {});
    assert.is(result.status, 0, `${group}: ${result.stderr}`);
    assert.match(result.stdout, new RegExp(`ingest ${group} ${sub}`));
  }
  const worker = ingest(['worker', '--help'], {});
  assert.match(worker.stdout, /ingest worker \[--concurrency N\]/);
  assert.match(worker.stdout, /ingest worker health/);
  const bare = ingest(['qa'], {});
  assert.is(bare.status, 2);
  assert.match(bare.stderr, /ingest qa proposals/);
  assert.match(bare.stderr, /ingest qa decide/);
});

test('every help line fits in 100 columns', () => {
  for (const args of [['--help'], ['jobs', '--help'], ['nightly', '--help']]) {
    const result = ingest(args, {});
    const wide = result.stdout.split('\n').filter((line) => line.length >= 100);
    assert.equal(wide, [], `ingest ${args.join(' ')}`);
  }
});

test('an unknown command exits 2 with the help text', () => {
  const result = ingest(['frobnicate'], {});
  assert.is(result.status, 2);
  assert.match(result.stderr, /unknown command "frobnicate"/);
  assert.match(result.stderr, /ingest db migrate/);
});

test('a malformed knob stops the command before it starts, naming the variable', () => {
  const result = ingest(['db', 'migrate'], { INGEST_SINK_BATCH_ROWS: 'lots' });
  assert.is(result.status, 2);
  assert.match(result.stderr, /INGEST_SINK_BATCH_ROWS must be a whole number/);
  const endpoint = ingest(['preflight'], { ANTHROPIC_BASE_URL: 'notaurl' });
  assert.is(endpoint.status, 2, endpoint.stderr);
  assert.match(endpoint.stderr, /ANTHROPIC_BASE_URL is not a valid URL/);
  const blank = ingest(['preflight'], { ANTHROPIC_BASE_URL: ' ', OPENAI_BASE_URL: '' });
  assert.is(blank.status, 0, blank.stderr);
});

test('a command that only reads the data directory finds none, names where it looked, and creates nothing', () => {
  const elsewhere = mkdtempSync(path.join(tmpdir(), 'ingest-elsewhere-'));
  try {
    for (const args of [
      ['search', 'warranty'],
      ['qa', 'proposals'],
      ['jobs', 'list'],
      ['entities', 'list'],
      ['produce'],
      ['feeds', 'list'],
      ['feeds', 'pass', 'https://example.com/a'],
      ['feeds', 'unpass', 'https://example.com/a'],
    ]) {
      const result = ingest(args, {}, undefined, elsewhere);
      assert.is(result.status, 2, `ingest ${args.join(' ')}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, new RegExp(`no (embedded database|engine state store) at ${elsewhere}/\\.ingest/`));
      assert.match(result.stderr, /INGEST_DATA_DIR/);
      assert.match(result.stderr, /ingest walk PATH/);
      assert.not.ok(existsSync(path.join(elsewhere, '.ingest')), `ingest ${args.join(' ')} created a data directory`);
    }
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }
});

test("README's one list of the commands that create a data directory is the command table's", () => {
  const readme = readFileSync(path.resolve(import.meta.dirname, '..', 'README.md'), 'utf8').replace(/\s+/g, ' ');
  const sentence = /Only ((?:`[a-z ]+`(?:, | and ))+`[a-z ]+`) create a data directory/.exec(readme);
  assert.ok(sentence, 'README names the commands that create a data directory');
  const named = [...sentence[1]!.matchAll(/`([a-z ]+)`/g)].map((m) => m[1]!);
  assert.equal([...named].sort(), [...DATA_DIR_CREATORS].sort());
  assert.is(readme.match(/created only by (?!the commands that fill it)/g), null, 'a second list of them');
});

test('db migrate applies the schema once (or finds it in a new embedded database) and reports where the database lives', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ingest-cli-'));
  const target = await openTestDatabase({ migrated: false });
  const total = (await loadMigrations()).length;
  try {
    const env: Record<string, string> = {
      INGEST_DATA_DIR: dataDir,
      ...(target.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
    };
    const first = ingest(['db', 'migrate'], env);
    assert.is(first.status, 0, first.stderr);
    assert.match(
      first.stdout,
      target.dsn ? /database: postgres at postgresql:/ : new RegExp(`database: pglite at ${dataDir}/pglite`),
    );
    // A new embedded database is a copy of the ready-made one, which holds them (lib/db/pglite-template.ts).
    const appliedNow = target.dsn ? total : 0;
    assert.match(
      first.stdout,
      new RegExp(`migrations: ${appliedNow} applied now, ${total - appliedNow} already applied`),
    );
    const second = ingest(['db', 'migrate'], env);
    assert.is(second.status, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`migrations: 0 applied now, ${total} already applied`));
  } finally {
    await target.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('extract cleans a file or stdin to JSON {text, verdict, warnings, title}; an unreadable file exits 1 naming it', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-extract-'));
  try {
    const page =
      `<html><head><meta charset="windows-1252"><title>Caf\u00e9 news</title></head><body><nav><a href="/">Home</a></nav>` +
      `<article>${'<p>The caf\u00e9 opened on Monday, and the queue went round the block twice before noon.</p>'.repeat(4)}</article></body></html>`;
    const file = path.join(dir, 'page.html');
    writeFileSync(file, Buffer.from(page, 'latin1'));
    const fromFile = ingest(['extract', file], {});
    assert.is(fromFile.status, 0, fromFile.stderr);
    const result = JSON.parse(fromFile.stdout) as { text: string; verdict: string; warnings: string[]; title: string };
    assert.is(result.verdict, 'ok');
    assert.equal(result.warnings, []);
    assert.is(result.title, 'Caf\u00e9 news', 'the meta charset decoded the bytes');
    assert.is(result.text.split('\n\n').length, 4);
    assert.not.ok(result.text.includes('Home'));

    const fromStdin = ingest(['extract', '-'], {}, Buffer.from('plain words, no markup'));
    assert.is(fromStdin.status, 0, fromStdin.stderr);
    assert.equal(JSON.parse(fromStdin.stdout), {
      text: '',
      verdict: 'not_html',
      warnings: ['charset_guessed'],
      title: null,
    });

    const missing = ingest(['extract', path.join(dir, 'absent.html')], {});
    assert.is(missing.status, 1);
    assert.match(missing.stderr, /cannot read .*absent\.html: ENOENT/);
    assert.is(ingest(['extract', 'a', 'b'], {}).status, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
