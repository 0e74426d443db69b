// What every benchmark shares: timing, medians, a plain table on stdout, and the JSON file an
// operator keeps (`--json FILE`), stamped with the machine it ran on.

import { cpus, totalmem } from 'node:os';
import { writeFile } from 'node:fs/promises';

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Resident memory of this process in MB. */
export const residentMb = (): number => Math.round(process.memoryUsage.rss() / 2 ** 20);

/**
 * Samples this process's resident memory every `everyMs` from now until `stop`, which returns
 * what it was at the start and the highest sample (the start and the stop included).
 */
export function sampleResidentMemory(everyMs = 50): { stop(): { before: number; peak: number } } {
  const before = residentMb();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, residentMb())), everyMs);
  return {
    stop() {
      clearInterval(sampler);
      return { before, peak: Math.max(peak, residentMb()) };
    },
  };
}

export const rate = (n: number): string => Math.round(n).toLocaleString('en-US');

export function printTable(header: readonly string[], body: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of body) console.log(line(r));
}

export function machine(): { node: string; cores: number; cpu: string; memoryGiB: number } {
  const list = cpus();
  return {
    node: process.version,
    cores: list.length,
    cpu: list[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
  };
}

export async function writeJson(
  file: string | undefined,
  benchmark: string,
  body: Record<string, unknown>,
): Promise<void> {
  if (file === undefined) return;
  await writeFile(
    file,
    `${JSON.stringify({ benchmark, when: new Date().toISOString(), machine: machine(), ...body }, null, 2)}\n`,
  );
}

/**
 * Durations in fixed logarithmic buckets (about 9 % wide, from 1 µs to hours): constant
 * memory whatever the number of samples, so a 100k-document walk can be timed per stage
 * without the timing itself growing the heap.
 */
export class LogHistogram {
  static readonly #PER_DOUBLING = 8;
  readonly #counts = new Float64Array(40 * LogHistogram.#PER_DOUBLING);
  #n = 0;

  add(milliseconds: number): void {
    const micros = Math.max(1, milliseconds * 1000);
    const bucket = Math.min(this.#counts.length - 1, Math.floor(Math.log2(micros) * LogHistogram.#PER_DOUBLING));
    this.#counts[bucket]! += 1;
    this.#n += 1;
  }

  get count(): number {
    return this.#n;
  }

  /** The upper edge of the bucket holding quantile q, in milliseconds. */
  quantile(q: number): number {
    if (this.#n === 0) return NaN;
    let seen = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      seen += this.#counts[i]!;
      if (seen >= q * this.#n) return 2 ** ((i + 1) / LogHistogram.#PER_DOUBLING) / 1000;
    }
    return NaN;
  }
}
