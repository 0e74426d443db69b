// A newcomer's first walk: `ingest walk` of a one-file corpus on a data directory that does not
// exist yet (the embedded database created on the way), then the same walk again, each timed as a
// whole process and its process tree's resident memory sampled every 20 ms: the walk's own
// process, the embedded database's, and the short-lived one that created the database before
// it was a copy of a ready-made one. Then the parts of the second walk's start, apart.
//
//   node bench/first-walk.ts [--runs N] [--ingest DIR] [--json FILE]
//
// `--ingest DIR` walks with another checkout's `ingest`, for a before and after in one sitting.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, printTable, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, ingest: { type: 'string' }, json: { type: 'string' } },
});
const RUNS = Number(args.runs);
const ROOT = path.resolve(args.ingest ?? path.join(import.meta.dirname, '..'));
const INGEST = path.join(ROOT, 'bin', 'ingest.ts');

/** The process's children, grandchildren and so on, by /proc's parent links. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone between the listing and the read.
    }
  }
  const found = [root];
  for (let i = 0; i < found.length; i++) for (const [pid, parent] of parents) if (parent === found[i]) found.push(pid);
  return found;
}

/** Resident MB and what each process of the tree runs (its script's file name). */
function residentByScript(pids: readonly number[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of pids) {
    try {
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      // A process between fork and exec, or exiting, has no command line yet or any more.
      if (argv[0] === '') continue;
      const script = path.basename(argv.find((a) => a.endsWith('.ts')) ?? argv[0] ?? '?');
      if (rss !== null) out.set(script, (out.get(script) ?? 0) + Number(rss[1]) / 1024);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return out;
}

interface WalkSample {
  seconds: number;
  /** Peak resident MB per process kind, and of the whole tree at once. */
  peaks: Map<string, number>;
}

async function walkOnce(dir: string): Promise<WalkSample> {
  const started = performance.now();
  const child = spawn(process.execPath, [INGEST, 'walk', 'corpus'], { cwd: dir, stdio: 'ignore' });
  const peaks = new Map<string, number>();
  const timer = setInterval(() => {
    const byScript = residentByScript(descendants(child.pid!));
    let tree = 0;
    for (const [script, mb] of byScript) {
      peaks.set(script, Math.max(peaks.get(script) ?? 0, mb));
      tree += mb;
    }
    peaks.set('the tree at once', Math.max(peaks.get('the tree at once') ?? 0, tree));
  }, 20);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearInterval(timer);
  if (code !== 0) throw new Error(`ingest walk exited with ${code} in ${dir}`);
  return { seconds: (performance.now() - started) / 1000, peaks };
}

/** ms a fresh Node takes for `code` (an ES module body), printed by it as a JSON object of figures. */
function timed(code: string): Record<string, number> {
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout) as Record<string, number>;
}

/**
 * Where a walk of an existing database spends its start, each part in a fresh Node: loading the
 * walk command's modules, and opening the embedded database as a walk does (its process
 * started and PGlite open, the migrations checked, the schema checked).
 */
function startParts(dataDir: string): Record<string, number> {
  const at = (file: string) => JSON.stringify(path.join(ROOT, file));
  const modules = timed(
    `const t = performance.now(); await import(${at('cli/walk.ts')});` +
      `console.log(JSON.stringify({ 'loading the modules': performance.now() - t }));`,
  );
  const open = timed(
    `const { openPglite } = await import(${at('lib/db/pglite.ts')});` +
      `const { migrate } = await import(${at('lib/db/migrate.ts')});` +
      `const { requireSchema } = await import(${at('lib/db/schema-check.ts')});` +
      `const t0 = performance.now(); const db = await openPglite(${JSON.stringify(dataDir)});` +
      `const t1 = performance.now(); await migrate(db); const t2 = performance.now();` +
      `await requireSchema(db); const t3 = performance.now(); await db.close();` +
      `console.log(JSON.stringify({ 'the database process started and open': t1 - t0,` +
      ` 'the migrations checked': t2 - t1, 'the schema checked': t3 - t2 }));`,
  );
  return { ...modules, ...open };
}

const first: WalkSample[] = [];
const second: WalkSample[] = [];
const parts: Record<string, number>[] = [];
for (let run = 0; run < RUNS; run++) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-bench-first-walk-'));
  try {
    mkdirSync(path.join(dir, 'corpus'));
    writeFileSync(path.join(dir, 'corpus', 'hello.md'), '# Hello\n\nAcme Corp signed a lease with Jane Doe.\n');
    first.push(await walkOnce(dir));
    second.push(await walkOnce(dir));
    parts.push(startParts(path.join(dir, '.ingest', 'pglite')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const kinds = [...new Set([...first, ...second].flatMap((s) => [...s.peaks.keys()]))].sort();
const mb = (samples: WalkSample[], kind: string) => median(samples.map((s) => s.peaks.get(kind) ?? 0));
const rows = [
  ['walk 1 (the database created)', first],
  ['walk 2 (it exists)', second],
] as const;
console.log(
  `\nA one-file corpus, ${RUNS} fresh data directories; medians (peak resident MB per process, 20 ms samples):`,
);
printTable(
  ['walk', 'seconds', ...kinds],
  rows.map(([name, samples]) => [
    name,
    median(samples.map((s) => s.seconds)).toFixed(2),
    ...kinds.map((k) => mb(samples, k).toFixed(0)),
  ]),
);
const partNames = Object.keys(parts[0] ?? {});
const partMs = Object.fromEntries(partNames.map((name) => [name, median(parts.map((p) => p[name]!))]));
console.log("\nThe second walk's start, each part in a fresh Node; medians:");
printTable(
  ['part', 'ms'],
  partNames.map((name) => [name, partMs[name]!.toFixed(0)]),
);
await writeJson(args.json, 'first-walk', {
  ...Object.fromEntries(
    rows.map(([name, samples]) => [
      name,
      {
        seconds: median(samples.map((s) => s.seconds)),
        ...Object.fromEntries(kinds.map((k) => [k, mb(samples, k)])),
      },
    ]),
  ),
  "the second walk's start, ms": partMs,
});
