// The /extract thread pool (piscina): cleaning happens off the main thread, a bounded number of
// pages at a time, with a bounded queue behind them; a full queue is a named 503, not a pile-up.

import { Piscina } from 'piscina';
import type { CleanedHtml } from '../stages/convert/html/index.ts';
import { HttpError } from './errors.ts';

export interface ExtractPool {
  clean(input: string | Uint8Array): Promise<Pick<CleanedHtml, 'text' | 'verdict' | 'warnings'>>;
  close(): Promise<void>;
}

export function createExtractPool(options: { threads: number; maxQueue: number }): ExtractPool {
  const pool = new Piscina({
    filename: new URL('./extract-worker.ts', import.meta.url).href,
    minThreads: 1,
    maxThreads: options.threads,
  });
  // Pages being cleaned or waiting for a thread; past threads + maxQueue the answer is a 503.
  let admitted = 0;
  return {
    async clean(input) {
      if (admitted >= options.threads + options.maxQueue) {
        throw new HttpError(
          503,
          'extract_busy',
          'every extract thread is busy and the queue is full; retry shortly',
          {},
          { 'retry-after': '1' },
        );
      }
      admitted++;
      try {
        return await pool.run(input);
      } finally {
        admitted--;
      }
    },
    close: () => pool.close({ force: true }),
  };
}
