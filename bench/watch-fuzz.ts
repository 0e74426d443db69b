// Random file operations against a watched corpus, as a developer and their tools make them:
// creates, in-place edits, editors' atomic saves (a hidden temp file renamed over the target),
// renames of files and folders, deletes, `mkdir -p` of new trees, bulk copies, and the swap and
// backup files editors leave behind. Seeded, so a failing run can be replayed. Used by
// test/watch.test.ts and bench/watch.ts, with the watch run that drives them (runWatchFuzz).

import { cp, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fencedCorpusWalk } from '../engine/trigger/fenced-walk.ts';
import type { Lifespan } from '../engine/lifespan.ts';
import { watchCorpus } from '../engine/trigger/watch.ts';
import { sha256Hex } from '../lib/hash.ts';
import { documentRandom } from './corpus/generate.ts';

export type FuzzOp =
  | 'create'
  | 'edit'
  | 'atomic_save'
  | 'rename_file'
  | 'rename_folder'
  | 'delete_file'
  | 'delete_folder'
  | 'mkdir_p'
  | 'bulk_copy'
  | 'editor_litter';

const WEIGHTS: [FuzzOp, number][] = [
  ['create', 20],
  ['edit', 20],
  ['atomic_save', 15],
  ['rename_file', 10],
  ['rename_folder', 3],
  ['delete_file', 10],
  ['delete_folder', 2],
  ['mkdir_p', 8],
  ['bulk_copy', 2],
  ['editor_litter', 10],
];
const WORDS = 'alpha beta gamma delta harbour ledger invoice policy travel audit supplier tender quality'.split(' ');

export class CorpusFuzzer {
  readonly #root: string;
  readonly #random: () => number;
  #serial = 0;
  readonly counts: Record<FuzzOp, number> = Object.fromEntries(WEIGHTS.map(([op]) => [op, 0])) as Record<
    FuzzOp,
    number
  >;

  constructor(root: string, seed: number) {
    this.#root = root;
    this.#random = documentRandom(seed, 0);
  }

  #pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[Math.floor(this.#random() * items.length)];
  }

  #text(): string {
    const words = Array.from({ length: 5 + Math.floor(this.#random() * 40) }, () => this.#pick(WORDS)!);
    return `# Note ${++this.#serial}\n\n${words.join(' ')}.\n`;
  }

  #name(extension = this.#random() < 0.8 ? 'md' : 'txt'): string {
    return `n${++this.#serial}.${extension}`;
  }

  /** Every folder and document of the corpus (not the hidden litter), relative. */
  async #tree(): Promise<{ dirs: string[]; files: string[] }> {
    const dirs = [''];
    const files: string[] = [];
    for (let i = 0; i < dirs.length; i++) {
      for (const entry of await readdir(path.join(this.#root, dirs[i]!), { withFileTypes: true })) {
        if (entry.name.startsWith('.')) continue;
        const rel = path.join(dirs[i]!, entry.name);
        if (entry.isDirectory()) dirs.push(rel);
        else if (/\.(md|txt)$/.test(entry.name)) files.push(rel);
      }
    }
    return { dirs, files };
  }

  /** One operation, chosen by weight; returns which. */
  async step(): Promise<FuzzOp> {
    let roll = this.#random() * WEIGHTS.reduce((n, [, w]) => n + w, 0);
    let op: FuzzOp = 'create';
    for (const [candidate, weight] of WEIGHTS) {
      if ((roll -= weight) < 0) {
        op = candidate;
        break;
      }
    }
    const { dirs, files } = await this.#tree();
    const at = (rel: string) => path.join(this.#root, rel);
    const file = this.#pick(files);
    const dir = this.#pick(dirs)!;
    const folders = dirs.filter((d) => d !== '');
    switch (op) {
      case 'edit':
        if (file === undefined) return this.step();
        await writeFile(at(file), this.#text());
        break;
      case 'atomic_save': {
        if (file === undefined) return this.step();
        const temp = path.join(path.dirname(at(file)), `.${path.basename(file)}.${this.#serial}.tmp`);
        await writeFile(temp, this.#text());
        await rename(temp, at(file));
        break;
      }
      case 'rename_file':
        if (file === undefined) return this.step();
        await rename(at(file), at(path.join(dir, this.#name())));
        break;
      case 'rename_folder': {
        const folder = this.#pick(folders);
        if (folder === undefined) return this.step();
        await rename(at(folder), at(path.join(path.dirname(folder), `f${++this.#serial}`)));
        break;
      }
      case 'delete_file':
        if (file === undefined) return this.step();
        await rm(at(file));
        break;
      case 'delete_folder': {
        const folder = this.#pick(folders);
        if (folder === undefined) return this.step();
        await rm(at(folder), { recursive: true });
        break;
      }
      case 'mkdir_p': {
        const deep = path.join(dir, `t${++this.#serial}`, `u${this.#serial}`, `v${this.#serial}`);
        await mkdir(at(deep), { recursive: true });
        await writeFile(at(path.join(deep, this.#name())), this.#text());
        break;
      }
      case 'bulk_copy': {
        const folder = this.#pick(folders);
        if (folder === undefined) return this.step();
        await cp(at(folder), at(`${folder}-copy${++this.#serial}`), { recursive: true });
        break;
      }
      case 'editor_litter': {
        // Swap, backup and lock files: never documents (hidden, or of no known type).
        const litter = this.#pick([`.${this.#serial}.swp`, `${this.#name()}~`, `#${this.#serial}#`, '4913'])!;
        const target = at(path.join(dir, litter));
        if (this.#random() < 0.5) await writeFile(target, this.#text());
        else await rm(target, { force: true });
        break;
      }
      case 'create':
        await writeFile(at(path.join(dir, this.#name())), this.#text());
        break;
    }
    this.counts[op] += 1;
    return op;
  }
}

/** The documents a walk of `root` should hold: every .md and .txt file not under a dot segment. */
export async function corpusDocuments(root: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (rel: string) => {
    for (const entry of await readdir(path.join(root, rel), { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await visit(child);
      else if (/\.(md|txt)$/.test(entry.name) && (await stat(path.join(root, child))).size > 0) out.push(child);
    }
  };
  await visit('');
  return out.sort();
}

export interface WatchFuzzResult {
  ops: number;
  counts: Record<FuzzOp, number>;
  /** Walks after the initial one. */
  walks: number;
  /** Save -> rows durable, for the probe saves, in ms. */
  latenciesMs: number[];
  durationMs: number;
  /** What the walks warned or failed with (a refused mass removal, a walk error), in order. */
  problems: string[];
}

/**
 * Watches `corpus` (engine/trigger/watch.ts, the same fenced walk as `ingest watch`) while `ops` random
 * operations run against it, in bursts with a pause longer than the quiet period now and then.
 * Every `probeEvery` operations a probe save is timed until its row is durable. Returns once
 * the watch has settled and stopped.
 */
export async function runWatchFuzz(options: {
  lifespan: Lifespan;
  corpus: string;
  ops: number;
  seed: number;
  quietMs: number;
  probeEvery: number;
}): Promise<WatchFuzzResult> {
  const { lifespan, corpus, quietMs } = options;
  const problems: string[] = [];
  const watch = await watchCorpus(
    { sourcePath: corpus, quietMs, maxDelayMs: 10 * quietMs, reconcileMs: 3_600_000 },
    ({ deletionsSeen }) => fencedCorpusWalk(lifespan, corpus, { allowMassRemoval: deletionsSeen }),
    ({ summary, error }) => {
      if (error !== undefined) problems.push(`walk threw: ${error.message}`);
      if (summary?.status === 'failed') problems.push(`walk failed: ${summary.error}`);
      // A folder renamed or deleted while a walk lists it is not listed (its rows kept); the walk
      // its move sets off lists it again, which the probes check by content.
      for (const warning of summary?.warnings ?? [])
        if (warning.name !== 'unlisted_directory') problems.push(`${warning.name}: ${warning.message}`);
    },
    lifespan.log,
  );
  await watch.settled();
  const initialWalks = watch.walks;
  const started = Date.now();
  const fuzzer = new CorpusFuzzer(corpus, options.seed);
  const pauses = documentRandom(options.seed, 1);
  const latenciesMs: number[] = [];
  for (let i = 1; i <= options.ops; i++) {
    await fuzzer.step();
    if (pauses() < 0.03) await sleep(quietMs * (1 + 2 * pauses()));
    if (i % options.probeEvery === 0) latenciesMs.push(await probeSave(lifespan, corpus, i));
  }
  await sleep(3 * quietMs);
  await watch.settled();
  await watch.stop();
  return {
    ops: options.ops,
    counts: fuzzer.counts,
    walks: watch.walks - initialWalks,
    latenciesMs,
    durationMs: Date.now() - started,
    problems,
  };
}

/** Saves a new document and waits until its source_documents row is committed. */
async function probeSave(lifespan: Lifespan, corpus: string, n: number): Promise<number> {
  const text = `# Probe ${n}\n\nprobe save number ${n} at ${Date.now()}\n`;
  const sha = sha256Hex(Buffer.from(text));
  await mkdir(path.join(corpus, 'probes'), { recursive: true });
  const saved = performance.now();
  await writeFile(path.join(corpus, 'probes', `p${n}.md`), text);
  for (;;) {
    const { rows } = await lifespan.db.query('SELECT 1 FROM source_documents WHERE content_sha256 = $1', [sha]);
    if (rows.length > 0) return performance.now() - saved;
    await sleep(5);
  }
}
