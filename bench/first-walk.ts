// A newcomer's first walk: `ingest walk` of a one-file corpus on a data directory that does not
// exist yet (the embedded database created on the way), then the same walk again, each timed as a
// whole process and its process tree's resident memory sampled every 20 ms: the walk's own
// process, the embedded database's, and the short-lived one that creates the database.
//
//   node bench/first-walk.ts [--runs N] [--ingest DIR] [--json FILE]
//
// `--ingest DIR` walks with another checkout's `ingest`, for a before and after in one sitting.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, printTable, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, ingest: { type: 'string' }, json: { type: 'string' } },
});
const RUNS = Number(args.runs);
const INGEST = path.resolve(args.ingest ?? path.join(import.meta.dirname, '..'), 'bin', 'ingest.ts');

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

const first: WalkSample[] = [];
const second: WalkSample[] = [];
for (let run = 0; run < RUNS; run++) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-bench-first-walk-'));
  try {
    mkdirSync(path.join(dir, 'corpus'));
    writeFileSync(path.join(dir, 'corpus', 'hello.md'), '# Hello\n\nAcme Corp signed a lease with Jane Doe.\n');
    first.push(await walkOnce(dir));
    second.push(await walkOnce(dir));
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
await writeJson(
  args.json,
  'first-walk',
  Object.fromEntries(
    rows.map(([name, samples]) => [
      name,
      {
        seconds: median(samples.map((s) => s.seconds)),
        ...Object.fromEntries(kinds.map((k) => [k, mb(samples, k)])),
      },
    ]),
  ),
);
