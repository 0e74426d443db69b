// `ingest bench corpus --docs N [--mix md:70,...] [--seed S] OUT`: writes the deterministic
// synthetic corpus of the throughput benchmarks (bench/corpus/), one document at a time.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CorpusMixError, DEFAULT_MIX, parseMix, type CorpusType } from '../bench/corpus/generate.ts';
import { corpusFiles } from '../bench/corpus/render.ts';
import { usageError } from './usage.ts';

export async function benchCorpusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      docs: { type: 'string' },
      mix: { type: 'string', default: DEFAULT_MIX },
      seed: { type: 'string', default: '1' },
    },
    allowPositionals: true,
  });
  const docs = Number(values.docs);
  const seed = Number(values.seed);
  if (values.docs === undefined || !Number.isSafeInteger(docs) || docs < 0)
    throw usageError('--docs N is required (a whole number >= 0)');
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > 0xffffffff)
    throw usageError('--seed must be a whole number from 0 to 4294967295');
  if (positionals.length !== 1) throw usageError('bench corpus takes exactly one OUT directory');
  let mix;
  try {
    mix = parseMix(values.mix);
  } catch (error) {
    throw error instanceof CorpusMixError ? usageError(error.message) : error;
  }
  const out = path.resolve(positionals[0]!);
  const counts = new Map<CorpusType, { files: number; bytes: number }>();
  const started = Date.now();
  const folders = new Set<string>();
  for await (const file of corpusFiles({ docs, mix, seed })) {
    const target = path.join(out, file.relPath);
    const folder = path.dirname(target);
    if (!folders.has(folder)) {
      await mkdir(folder, { recursive: true });
      folders.add(folder);
    }
    await writeFile(target, file.bytes);
    const c = counts.get(file.type) ?? { files: 0, bytes: 0 };
    c.files += 1;
    c.bytes += file.bytes.length;
    counts.set(file.type, c);
  }
  const lines = [...counts].map(
    ([type, c]) =>
      `  ${type.padEnd(5)} ${String(c.files).padStart(8)} files ${(c.bytes / 2 ** 20).toFixed(1).padStart(9)} MB`,
  );
  process.stdout.write(
    `corpus of ${docs} documents (seed ${seed}, mix ${values.mix}) in ${out}, ${((Date.now() - started) / 1000).toFixed(1)} s\n${lines.join('\n')}\n`,
  );
  return 0;
}
