// Warm and touched re-walks of two checkouts side by side in one process, taking turns, so that a
// difference of some milliseconds shows through a loaded machine's drift, which moves single
// walks of 60 ms by half (bench/README.md "Peak memory, warm walks and CPU against the starting
// code, in pairs").
//
//   node bench/walk-side-by-side.ts --other DIR [--docs N] [--seed S] [--engine pglite|postgres]
//                                   [--warm N] [--touched N] [--json FILE]
//
// DIR is another checkout with node_modules of its own (the starting code's, say): its modules
// load from there, this checkout's from here. Each walks its copy of one generated corpus cold, on
// a database of its own (a fresh data directory; on postgres a fresh schema of ENGINE_DB_DSN),
// the other first; then their warm re-walks take turns, then their touched walks (ten Markdown
// files rewritten before each). On PostgreSQL the database walked cold last may re-walk slower
// for a while whichever code it holds: run it twice with the checkouts swapped (`--other` the
// one here, from the other checkout) before reading a difference as the code's.

import { cpSync, mkdtempSync, readdirSync, appendFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import type { Lifespan } from '../engine/lifespan.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import type { WalkOptions } from '../engine/walk/walk-options.ts';
import { DEFAULT_MIX, parseMix } from './corpus/generate.ts';
import { startMockProcess } from './mock-process.ts';
import { median, printTable, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    other: { type: 'string' },
    docs: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    engine: { type: 'string', default: 'pglite' },
    warm: { type: 'string', default: '40' },
    touched: { type: 'string', default: '10' },
    json: { type: 'string' },
  },
});
if (args.other === undefined) {
  console.error('walk-side-by-side: --other DIR names the checkout to walk beside this one');
  process.exit(2);
}
if (args.engine === 'postgres' && !process.env.ENGINE_DB_DSN) {
  console.error('walk-side-by-side: --engine postgres needs ENGINE_DB_DSN (scripts/pg-with-vector.sh)');
  process.exit(2);
}
if (args.engine !== 'postgres') delete process.env.ENGINE_DB_DSN;
const TOUCHED_FILES = 10;

/** What this benchmark calls of a checkout; the other's modules are typed as this one's. */
interface Checkout {
  root: string;
  loadConfig: typeof import('../lib/config.ts').loadConfig;
  openLifespan: typeof import('../engine/lifespan.ts').openLifespan;
  walk: typeof import('../engine/walk/walk.ts').walk;
  WALKS_ONLY: typeof import('./engines.ts').WALKS_ONLY;
  openTestDatabase: typeof import('./scratch-database.ts').openTestDatabase;
}

async function loadCheckout(root: string): Promise<Checkout> {
  const load = (file: string) => import(pathToFileURL(path.join(root, file)).href);
  return {
    root,
    ...((await load('lib/config.ts')) as Pick<Checkout, 'loadConfig'>),
    ...((await load('engine/lifespan.ts')) as Pick<Checkout, 'openLifespan'>),
    ...((await load('engine/walk/walk.ts')) as Pick<Checkout, 'walk'>),
    ...((await load('bench/engines.ts')) as Pick<Checkout, 'WALKS_ONLY'>),
    ...((await load('bench/scratch-database.ts')) as Pick<Checkout, 'openTestDatabase'>),
  };
}

interface Side {
  checkout: Checkout;
  corpus: string;
  lifespan: Lifespan;
  dispose(): Promise<void>;
  walk(): Promise<WalkSummary>;
  coldSeconds: number;
  warmMs: number[];
  touchedMs: number[];
}

async function openSide(checkout: Checkout, corpus: string, dataDir: string): Promise<Side> {
  const scratch = args.engine === 'postgres' ? await checkout.openTestDatabase() : null;
  const config = checkout.loadConfig(
    {
      INGEST_DATA_DIR: dataDir,
      INGEST_LOG_LEVEL: 'silent',
      ...checkout.WALKS_ONLY,
      ...(scratch === null ? {} : { ENGINE_DB_DSN: process.env.ENGINE_DB_DSN }),
    },
    dataDir,
  );
  const lifespan = await checkout.openLifespan(
    config,
    pino({ level: 'silent' }),
    scratch === null ? {} : { db: scratch.db },
  );
  const options: WalkOptions = { sourcePath: corpus };
  return {
    checkout,
    corpus,
    lifespan,
    async dispose() {
      await lifespan.close();
      await scratch?.dispose();
    },
    walk: async () => {
      const summary = await checkout.walk(lifespan, options);
      if (summary.status !== 'completed') throw new Error(`${checkout.root}: walk ${summary.status}: ${summary.error}`);
      return summary;
    },
    coldSeconds: 0,
    warmMs: [],
    touchedMs: [],
  };
}

/** The first ten Markdown files of the corpus, each given one more line. */
function touch(corpus: string, round: number): void {
  const files = readdirSync(corpus, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .sort()
    .slice(0, TOUCHED_FILES);
  for (const file of files) appendFileSync(path.join(corpus, file), `\n\nA line added by touched walk ${round}.\n`);
}

/** Each side once per round, the order turned every round. */
async function inTurns(sides: readonly Side[], rounds: number, each: (side: Side, round: number) => Promise<void>) {
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) await each(side, round);
  }
}

const here = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(path.join(tmpdir(), 'ingest-bench-side-by-side-'));
const mock = await startMockProcess(0);
Object.assign(process.env, {
  ANTHROPIC_BASE_URL: mock.url,
  ANTHROPIC_API_KEY: 'bench-mock',
  OPENAI_BASE_URL: `${mock.url}/v1`,
  OPENAI_API_KEY: 'bench-mock',
});
const sides: Side[] = [];
try {
  const { corpusFiles } = await import('./corpus/render.ts');
  const { mkdir, writeFile } = await import('node:fs/promises');
  const corpus = path.join(work, 'corpus');
  for await (const file of corpusFiles({
    docs: Number(args.docs),
    mix: parseMix(DEFAULT_MIX),
    seed: Number(args.seed),
  })) {
    await mkdir(path.dirname(path.join(corpus, file.relPath)), { recursive: true });
    await writeFile(path.join(corpus, file.relPath), file.bytes);
  }
  for (const [i, root] of [path.resolve(args.other), here].entries()) {
    const copy = path.join(work, `corpus-${i}`);
    cpSync(corpus, copy, { recursive: true });
    const side = await openSide(await loadCheckout(root), copy, path.join(work, `data-${i}`));
    sides.push(side);
    side.coldSeconds = (await side.walk()).durationMs / 1000;
  }
  await inTurns(sides, Number(args.warm), async (side) => {
    const summary = await side.walk();
    if (summary.items.changed !== 0)
      throw new Error(`${side.checkout.root}: a warm walk changed ${summary.items.changed}`);
    side.warmMs.push(summary.durationMs);
  });
  await inTurns(sides, Number(args.touched), async (side, round) => {
    touch(side.corpus, round);
    const summary = await side.walk();
    if (summary.items.changed !== TOUCHED_FILES)
      throw new Error(`${side.checkout.root}: a touched walk changed ${summary.items.changed}`);
    side.touchedMs.push(summary.durationMs);
  });
} finally {
  for (const side of sides) await side.dispose();
  await mock.close();
  rmSync(work, { recursive: true, force: true });
}

const fmt = (ms: number[]) => (ms.length === 0 ? '-' : `${median(ms).toFixed(0)} (${Math.min(...ms).toFixed(0)})`);
console.log(`\n${args.docs} documents on ${args.engine}, the other checkout walked cold first:`);
printTable(
  ['checkout', 'cold s', `warm ms, median (min) of ${args.warm}`, `touched ms, median (min) of ${args.touched}`],
  sides.map((side) => [side.checkout.root, side.coldSeconds.toFixed(1), fmt(side.warmMs), fmt(side.touchedMs)]),
);
await writeJson(args.json, 'walk-side-by-side', {
  docs: Number(args.docs),
  engine: args.engine,
  sides: sides.map(({ checkout, coldSeconds, warmMs, touchedMs }) => ({
    root: checkout.root,
    coldSeconds,
    warmMs,
    touchedMs,
  })),
});
