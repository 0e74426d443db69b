// What a benchmark reads of its own children's memory from /proc (Linux).

import { readdirSync, readFileSync } from 'node:fs';

/** Peak RSS (VmHWM) of this process's embedded database process (lib/db/pglite-process.ts), if it has one. */
export function databaseProcessPeakMb(): number | null {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid || !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('pglite-process.ts')) continue;
      return Math.round(Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024);
    } catch {
      // Ended while we looked.
    }
  }
  return null;
}

export interface MemorySample {
  anon: number;
  file: number;
  heapUsed: number;
  /** The JS heap V8 holds (in use or not), and memory outside it that JS objects own (ArrayBuffers: Buffers, typed arrays). */
  heapTotal: number;
  arrayBuffers: number;
}

/**
 * Resident memory split as Linux counts it: anonymous pages are the process's own; file-backed
 * pages are mapped files (LMDB maps the state store, so its pages read or written show here),
 * which the kernel can drop under pressure. Elsewhere only the heap is known.
 */
export function memorySample(): MemorySample {
  const status = (() => {
    try {
      return readFileSync('/proc/self/status', 'utf8');
    } catch {
      return '';
    }
  })();
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  const js = process.memoryUsage();
  const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
  return {
    anon: Math.round(kb('RssAnon') / 1024),
    file: Math.round(kb('RssFile') / 1024),
    heapUsed: mb(js.heapUsed),
    heapTotal: mb(js.heapTotal),
    arrayBuffers: mb(js.arrayBuffers),
  };
}
