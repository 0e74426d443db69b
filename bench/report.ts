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

/** The value at quantile q (0..1) of xs, nearest rank. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
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
  return { node: process.version, cores: list.length, cpu: list[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30) };
}

export async function writeJson(file: string | undefined, benchmark: string, body: Record<string, unknown>): Promise<void> {
  if (file === undefined) return;
  await writeFile(file, `${JSON.stringify({ benchmark, when: new Date().toISOString(), machine: machine(), ...body }, null, 2)}\n`);
}
