// Walk progress for a person: a bar with rate and ETA on a terminal; on anything else, one
// log line every few seconds. The total is unknown when the walk starts (the walk streams),
// so a second, silent enumeration counts the corpus alongside and sets it when done.

import cliProgress from 'cli-progress';
import { pino } from 'pino';
import type { Logger } from '../lib/log.ts';
import type { WalkProgress } from '../engine/walk.ts';
import { walkFiles } from '../lib/corpus/files.ts';

export interface ProgressReporter {
  update(progress: WalkProgress): void;
  stop(): void;
}

const LOG_EVERY_MS = 5_000;

export function progressReporter(sourcePath: string | null, log: Logger): ProgressReporter {
  const started = Date.now();
  if (!process.stderr.isTTY || sourcePath === null) {
    let lastLog = started;
    return {
      update({ seen, done }) {
        const now = Date.now();
        if (now - lastLog < LOG_EVERY_MS) return;
        lastLog = now;
        log.info({ seen, done, perSecond: Math.round((done * 1000) / (now - started)) }, 'walk progress');
      },
      stop() {},
    };
  }
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: ' {bar} {value}/{total} items | {rate}/s | ETA {eta_formatted}',
      etaBuffer: 200,
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(0, 0, { rate: 0 });
  let stopped = false;
  void countFiles(sourcePath).then((total) => {
    if (!stopped) bar.setTotal(total);
  });
  return {
    update({ seen, done }) {
      if (bar.getTotal() < seen) bar.setTotal(seen);
      bar.update(done, { rate: Math.round((done * 1000) / Math.max(1, Date.now() - started)) });
    },
    stop() {
      stopped = true;
      bar.stop();
    },
  };
}

async function countFiles(sourcePath: string): Promise<number> {
  let n = 0;
  for await (const _ of walkFiles(sourcePath, pino({ level: 'silent' }))) n += 1;
  return n;
}
