// The README's quick start, followed literally by a newcomer: `npm start` walks the examples,
// `npx ingest walk PATH` walks their own folder, `npx ingest search QUERY` answers from it. Run
// in a copy of the checkout (its package.json, the rest linked) so that the data directories land
// in a scratch folder, with the system's npm offline and on its own cache.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

let scratch: string;
let checkout: string;
let env: Record<string, string>;

test.before(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'ingest-quick-start-'));
  checkout = path.join(scratch, 'checkout');
  mkdirSync(checkout);
  copyFileSync(path.join(ROOT, 'package.json'), path.join(checkout, 'package.json'));
  for (const linked of ['bin', 'examples', 'node_modules'])
    symlinkSync(path.join(ROOT, linked), path.join(checkout, linked));
  // The PATH a newcomer has: no node_modules/.bin of ours (`npm test` puts its Node 24 there).
  const systemPath = (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !dir.includes(`${path.sep}node_modules${path.sep}`))
    .join(path.delimiter);
  env = {
    PATH: systemPath,
    HOME: path.join(scratch, 'home'),
    npm_config_cache: path.join(scratch, 'npm-cache'),
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
  };
});
test.after(() => rmSync(scratch, { recursive: true, force: true }));

function run(command: string, args: string[], extra: Record<string, string> = {}) {
  const result = spawnSync(command, args, {
    cwd: checkout,
    env: { ...env, ...extra },
    encoding: 'utf8',
    timeout: 300_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('npm start, then npx ingest walk on your own folder, then npx ingest search: each succeeds', () => {
  const started = run('npm', ['start']);
  assert.is(started.status, 0, started.stderr.slice(-4000));
  assert.match(started.stdout, /items: 8 seen, 8 changed/);

  const own = path.join(scratch, 'my documents');
  mkdirSync(own);
  writeFileSync(
    path.join(own, 'warranty.md'),
    '# Warranty\n\nEvery pump carries a five-year warranty covering parts and labour.\n',
  );
  const walked = run('npx', ['ingest', 'walk', own]);
  assert.is(walked.status, 0, walked.stderr.slice(-4000));
  assert.match(walked.stdout, /items: 1 seen, 1 changed/);
  assert.not.match(walked.stderr, /EBADENGINE/, 'npm warns of no engine mismatch');

  const found = run('npx', ['ingest', 'search', 'warranty']);
  assert.is(found.status, 0, found.stderr.slice(-4000));
  assert.match(found.stdout, /five-year warranty/);

  const examples = run('npx', ['ingest', 'search', 'travel'], { INGEST_DATA_DIR: '.ingest/examples' });
  assert.is(examples.status, 0, examples.stderr.slice(-4000));
  assert.match(examples.stdout, /policies\/travel\.md|travel/i);
});

test.run();
