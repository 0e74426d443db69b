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
