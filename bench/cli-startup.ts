// How fast `ingest --help` starts and how much memory it holds, next to the floor measured in
// the same run (a Node that loads one TypeScript module and exits) and to loading every
// command's module at start, as the CLI did before it imported each on use.
//
//   node bench/cli-startup.ts [--runs N] [--json FILE]

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, printTable, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '15' }, json: { type: 'string' } },
});
const RUNS = Number(args.runs);
const ROOT = path.resolve(import.meta.dirname, '..');
// Every run loads it (one TypeScript module): the floor is then a Node that runs TypeScript.
const RECORDER = path.join(ROOT, 'test', 'helpers', 'record-modules.ts');
const HEAVY =
  /\/node_modules\/(pg|pg-copy-streams|@electric-sql\/pglite[^/]*|lmdb|pdf-parse|pdfjs-dist|mammoth|exceljs|jszip|yauzl|piscina|@anthropic-ai\/sdk|openai)\//;

const everyCommand = readdirSync(path.join(ROOT, 'cli'))
  .filter((f) => f.endsWith('.ts') && f !== 'bench-corpus.ts')
  .map((f) => `await import(${JSON.stringify(path.join(ROOT, 'cli', f))});`)
  .join('');

const VARIANTS: Record<string, string[]> = {
  'floor: node, one TypeScript module': ['-e', '0'],
  'ingest --help': [path.join(ROOT, 'bin', 'ingest.ts'), '--help'],
  'every command module loaded (before)': ['--input-type=module', '-e', everyCommand],
};

const scratch = mkdtempSync(path.join(tmpdir(), 'ingest-bench-cli-'));
const samples = new Map(
  Object.keys(VARIANTS).map((name) => [name, { ms: [] as number[], rssMb: [] as number[], heavy: 0 }]),
);
try {
  for (let run = 0; run < RUNS; run++) {
    for (const [name, argv] of Object.entries(VARIANTS)) {
      const out = path.join(scratch, 'modules.json');
      const start = process.hrtime.bigint();
      const result = spawnSync(process.execPath, ['--import', RECORDER, ...argv], {
        env: { PATH: process.env.PATH ?? '', INGEST_RECORD_MODULES_TO: out },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (result.status !== 0) throw new Error(`${name} exited ${result.status}: ${result.stderr}`);
      const recorded = JSON.parse(readFileSync(out, 'utf8')) as { modules: string[]; maxRssKb: number };
      const sample = samples.get(name)!;
      sample.ms.push(ms);
      sample.rssMb.push(recorded.maxRssKb / 1024);
      sample.heavy = recorded.modules.filter((m) => HEAVY.test(m)).length;
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const floor = median(samples.get('floor: node, one TypeScript module')!.ms);
const rows = [...samples].map(([name, s]) => ({
  name,
  medianMs: Math.round(median(s.ms)),
  ratioToFloor: Number((median(s.ms) / floor).toFixed(2)),
  peakRssMb: Math.round(median(s.rssMb)),
  heavyModules: s.heavy,
}));
console.log(`start-up over ${RUNS} runs each, interleaved (median wall time of the whole process)\n`);
printTable(
  ['what', 'median ms', 'x floor', 'peak RSS MB', 'heavy modules loaded'],
  rows.map((r) => [r.name, String(r.medianMs), r.ratioToFloor.toFixed(2), String(r.peakRssMb), String(r.heavyModules)]),
);
await writeJson(args.json, 'cli-startup', { runs: RUNS, rows });
