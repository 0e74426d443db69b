// @engine
// What a person at a terminal sees: `ingest walk` and `ingest watch` run on a pseudo-terminal,
// their bytes played into a terminal emulator, and the lines it then holds read as a person
// reads them. Log records pass above the progress bar, the bar is gone before the summary,
// nothing follows the command's end, and Ctrl-C says what the walk leaves.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { startMockServer } from '../mock/server.ts';
import { BIN, runIngest } from './helpers/cli.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { mockTierEnv } from './helpers/mock-tier.ts';
import { onTerminal } from './helpers/terminal.ts';

const EXAMPLES = path.resolve(import.meta.dirname, '..', 'examples', 'corpus');

let root: string;
let target: TestDatabase | null = null;
let env: Record<string, string>;
test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-terminal-'));
  env = { INGEST_DATA_DIR: path.join(root, 'data') };
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase({ migrated: false });
    env.ENGINE_DB_DSN = target.dsn!;
    spawnSync(process.execPath, [BIN, 'db', 'migrate'], { env: { PATH: process.env.PATH ?? '', ...env } });
  }
});
test.after.each(async () => {
  await target?.dispose();
  target = null;
  rmSync(root, { recursive: true, force: true });
});

const TIME = String.raw`\[\d\d:\d\d:\d\d\.\d{3}\]`;
/** A log record as the terminal shows it: one line, a time, a level, a message, its fields as JSON. */
const LOG_RECORD = new RegExp(`^${TIME} (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): ([^{]*?)( (\\{.*\\}))?$`);
const BAR = /[█░]|items \|/;

/** Fails unless the line is one whole log record, its fields intact. */
function assertLogRecord(line: string): RegExpMatchArray {
  const record = line.match(LOG_RECORD);
  assert.ok(record, `not a whole log record: ${JSON.stringify(line)}`);
  assert.is(line.match(new RegExp(TIME, 'g'))!.length, 1, `two records on one line: ${line}`);
  if (record[4] !== undefined) assert.not.throws(() => JSON.parse(record[4]!), `fields cut or mixed: ${line}`);
  return record;
}

test('npm start on a terminal: log records above the bar, the bar gone before the summary, nothing after the end', async () => {
  const { status, lines } = await onTerminal(['walk', EXAMPLES], env).ended;
  assert.is(status, 0, lines.join('\n'));
  assert.is(lines.at(-1), '[exit 0]', `something printed after the command ended:\n${lines.join('\n')}`);
  const summaryAt = lines.findIndex((line) => /^walk [0-9a-f-]{36} completed in \d+\.\d s$/.test(line));
  assert.ok(summaryAt > 0, `no summary:\n${lines.join('\n')}`);
  assert.equal(
    lines.slice(summaryAt + 1, -1).map((line) => line.split(':')[0]),
    ['items', 'rows written (upserts, rows already there included)', 'database'],
    `the summary is not whole, or something follows it:\n${lines.join('\n')}`,
  );
  assert.match(lines[summaryAt + 1]!, /^items: 8 seen, 8 changed, 0 unchanged, 0 failed/);
  for (const line of lines.slice(0, summaryAt)) {
    assert.not.match(line, BAR, `the progress bar was left on the screen: ${line}`);
    assertLogRecord(line);
  }
});

test('Ctrl-C in the middle of a walk says what it committed; the next walk redoes the rest', async () => {
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  const documents = 24;
  for (let i = 0; i < documents; i++)
    await writeFile(path.join(corpus, `note-${i}.md`), `# Note ${i}\n\nThe note numbered ${i} of the corpus.\n`);
  // A slow model, and one item at a time: the walk is long enough to be interrupted in its middle.
  const mock = await startMockServer({ latencyMs: 150 });
  try {
    const walking = onTerminal(['walk', corpus], {
      ...env,
      ...mockTierEnv(mock.url),
      INGEST_WALK_IN_FLIGHT: '1',
      INGEST_PRODUCER_AFTER_WALK: 'false',
    });
    await walking.waitFor(new RegExp(` [1-9]\\d*/${documents} items`));
    walking.type('\x03');
    const { status, lines } = await walking.ended;
    assert.is(status, 130, lines.join('\n'));
    assert.is(lines.at(-1), '[exit 130]', lines.join('\n'));
    const said = lines
      .at(-2)!
      .match(
        /^ingest walk interrupted: (\d+) changed items committed, 0 unchanged, 0 failed, of (\d+) seen so far; the next walk redoes the rest$/,
      );
    assert.ok(said, `the interruption said nothing, or not last:\n${lines.join('\n')}`);
    const committed = Number(said[1]);
    assert.ok(committed >= 1 && committed < documents, `${committed} of ${documents} committed`);
    assert.ok(Number(said[2]) >= committed);
    for (const line of lines) assert.not.match(line, BAR, `the progress bar was left on the screen: ${line}`);

    const next = await runIngest(['walk', corpus, '--json'], { ...env, INGEST_PRODUCER_AFTER_WALK: 'false' });
    assert.is(next.status, 0, next.stderr);
    const summary = JSON.parse(next.stdout) as WalkSummary;
    assert.is(summary.items.unchanged, committed, 'what the interruption called committed is kept');
    assert.is(summary.items.changed, documents - committed, 'the next walk redoes the rest');
  } finally {
    await mock.close();
  }
});

test('ingest watch on a terminal: one line per walk, no log records but warnings, the bar gone, Ctrl-C after the commit', async () => {
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  await writeFile(path.join(corpus, 'a.md'), '# A\n\nthe first note\n');
  const watching = onTerminal(['watch', corpus, '--quiet-ms', '150'], env);
  await watching.waitFor(/initial walk: 1 changed, 0 unchanged/);
  await writeFile(path.join(corpus, 'b.md'), '# B\n\nthe second note\n');
  await watching.waitFor(/\d\d:\d\d:\d\d walk: 1 changed \(b\.md\)/);
  watching.type('\x03');
  const { status, lines } = await watching.ended;
  assert.is(status, 0, lines.join('\n'));
  const said = lines.filter((line) => !/^(WARN|ERROR)$/.test(line.match(LOG_RECORD)?.[1] ?? ''));
  assert.equal(
    // The terminal echoes the Ctrl-C typed as ^C.
    said.map((line) =>
      line
        .replace(/^\^C/, '')
        .replace(/^\d\d:\d\d:\d\d /, 'HH:MM:SS ')
        .replace(/rows \d+ written/, 'rows N written')
        .replace(/[\d.]+ s$/, 'N s'),
    ),
    [
      `watching ${corpus} (Ctrl-C stops after the walk in progress)`,
      'HH:MM:SS initial walk: 1 changed, 0 unchanged; rows N written, 0 deleted; N s',
      'HH:MM:SS walk: 1 changed (b.md); rows N written, 0 deleted; N s',
      'stopping after the walk in progress commits (Ctrl-C again to stop now)',
      '[exit 0]',
    ],
    lines.join('\n'),
  );
  for (const line of lines) {
    assert.not.match(line, BAR, `the progress bar was left on the screen: ${line}`);
    if (line.match(LOG_RECORD)) assertLogRecord(line);
  }
});

test('ingest watch --verbose logs what its walks do', async () => {
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  await writeFile(path.join(corpus, 'a.md'), '# A\n\nthe first note\n');
  const watching = onTerminal(['watch', corpus, '--verbose'], env);
  await watching.waitFor(/initial walk: 1 changed/);
  watching.type('\x03');
  const { status, lines } = await watching.ended;
  assert.is(status, 0, lines.join('\n'));
  const messages = lines.map((line) => line.match(LOG_RECORD)?.[2]).filter((m) => m !== undefined);
  assert.ok(messages.includes('walk started') && messages.includes('walk finished'), lines.join('\n'));
});

test.run();
