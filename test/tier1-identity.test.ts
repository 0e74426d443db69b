// @engine
// Tier 1's memos outlive the process (issue 41 point 17): every `ingest walk` with no model
// configured starts the in-process mock on a new port, yet an edit to a long document
// re-extracts only the window it touched, as on any endpoint at a fixed address. Real `ingest`
// processes with no model variable at all, the state store read between them.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { pino } from 'pino';
import { startMockTierIfUnconfigured } from '../cli/tier1.ts';
import { EMBEDDER_VARIABLES } from '../lib/embed/client.ts';
import { createLlmClient, LLM_IDENTITY_VARIABLE, LLM_VARIABLES, llmIdentity } from '../lib/llm/client.ts';
import { MOCK_VERSION } from '../mock/version.ts';
import { openStateStore } from '../lib/state/store.ts';
import { extractionWindows } from '../stages/extract/index.ts';
import { runIngest } from './helpers/cli.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';

let root: string;
let target: TestDatabase | null = null;
test.before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-tier1-identity-'));
});
test.after(async () => {
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** About 31 KB of prose, three extraction windows; no capitalised phrase, so no entity to resolve. */
function longDocument(): string {
  const paragraphs = Array.from(
    { length: 60 },
    (_, i) =>
      `paragraph ${i} of the field manual says how the pumps of station ${i} are primed, how often ` +
      `their seals are checked and what the crew writes down when pressure ${i % 7} falls below the ` +
      `line marked on the gauge; the crew then closes valve ${i} and waits for the reading to settle ` +
      `before it calls the shift lead, who decides whether the pump stays in service or is swapped.`,
  );
  return `# Field manual\n\n${paragraphs.join('\n\n')}\n`;
}

const APPENDED = '\n\nan added note says the seals of every pump are now checked twice a week.\n';

test('with no model configured, an edit re-extracts only the window it touched, run after run', async () => {
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus, { recursive: true });
  const text = longDocument();
  await writeFile(path.join(corpus, 'manual.md'), text);
  const before = extractionWindows(text);
  const after = extractionWindows(text + APPENDED);
  assert.is(before.length, 3);
  const touched = after.filter((w) => !before.includes(w)).length;
  assert.is(touched, 1, 'the appended paragraph touches the last window only');

  const env: Record<string, string> = {
    INGEST_DATA_DIR: path.join(root, 'data'),
    INGEST_LOG_LEVEL: 'warn',
    INGEST_PRODUCER_AFTER_WALK: 'false',
  };
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    env.ENGINE_DB_DSN = target.dsn!;
  }
  await seedDataDir(env.INGEST_DATA_DIR!);
  const config = loadConfig(env, root);
  const memoEntries = async () => {
    const store = await openStateStore(config.stateStorePath);
    try {
      return await store.memoCount();
    } finally {
      await store.close();
    }
  };

  const first = await runIngest(['walk', corpus], env);
  assert.is(first.status, 0, first.stderr);
  const cold = await memoEntries();
  await appendFile(path.join(corpus, 'manual.md'), APPENDED);
  const second = await runIngest(['walk', corpus], env);
  assert.is(second.status, 0, second.stderr);
  const added = (await memoEntries()) - cold;
  // Q&A, entities and relationships of the touched window; classification reads the first.
  assert.is(added, 3 * touched, `new memo entries after the edit (the cold walk made ${cold})`);
});

test("a named endpoint's identity does not depend on its port; any other is scoped by its base URL", () => {
  const mockAt = (port: number) => ({ baseURL: `http://127.0.0.1:${port}` });
  const named = (baseUrl: string) => ({ ANTHROPIC_BASE_URL: baseUrl, [LLM_IDENTITY_VARIABLE]: 'tier1-mock@v' });
  assert.is(llmIdentity(mockAt(4001), 'm', named('http://127.0.0.1:4001')), 'tier1-mock@v:m');
  assert.is(
    llmIdentity(mockAt(4002), 'm', named('http://127.0.0.1:4002/')),
    'tier1-mock@v:m',
    'a trailing slash aside',
  );
  assert.is(
    llmIdentity(mockAt(4003), 'm', named('http://127.0.0.1:4001')),
    'http://127.0.0.1:4003:m',
    'another address',
  );
  assert.is(llmIdentity(mockAt(4001), 'm', { ANTHROPIC_BASE_URL: 'http://127.0.0.1:4001' }), 'http://127.0.0.1:4001:m');
  assert.is(
    llmIdentity(mockAt(4001), 'm', { ...named('http://127.0.0.1:4001'), [LLM_IDENTITY_VARIABLE]: ' ' }),
    'http://127.0.0.1:4001:m',
    'blank is unset',
  );
});

test('tier 1 started by a command names the mock in the environment, and takes the name back when it stops', async () => {
  const saved = { ...process.env };
  for (const name of [...LLM_VARIABLES, ...EMBEDDER_VARIABLES, LLM_IDENTITY_VARIABLE]) delete process.env[name];
  try {
    const tier1 = await startMockTierIfUnconfigured(pino({ level: 'silent' }));
    const identity = llmIdentity(createLlmClient(), 'm');
    assert.is(identity, `tier1-mock@${MOCK_VERSION}:m`);
    await tier1.close();
    assert.is(process.env[LLM_IDENTITY_VARIABLE], undefined);
    assert.is(process.env.ANTHROPIC_BASE_URL, undefined);
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
});

test.run();
