// Walk progress for a person: on a terminal, a bar with rate and ETA on the bottom line, with
// log lines passing above it (lib/terminal.ts); on anything else, one log line every few
// seconds. The total is unknown when the walk starts (the walk streams), so a second, silent
// enumeration counts the corpus alongside; until it has, the line shows what is done without a
// bar, since a bar of an unknown total would say nothing true.

import { pino } from 'pino';
import type { Logger } from '../lib/log.ts';
import { stderrLines, type TerminalLines } from '../lib/terminal.ts';
import type { WalkProgress } from '../engine/walk/walk-options.ts';
import { walkFiles } from '../lib/corpus/files.ts';

const LOG_EVERY_MS = 5_000;
/** Items can finish thousands a second (unchanged files): the bar is drawn at most this often... */
const DRAW_EVERY_MS = 100;
/** ...and at least this often, so rate and ETA move while one long item converts. */
const REDRAW_MS = 1_000;
const BAR_WIDTH = 30;

export abstract class ProgressReporter {
  #latest: WalkProgress = {
    seen: 0,
    done: 0,
    items: { seen: 0, changed: 0, unchanged: 0, failed: 0, dropped: 0, skipped: 0, removed: 0 },
  };
  protected started = Date.now();

  /** The last progress the walk told. */
  get latest(): WalkProgress {
    return this.#latest;
  }

  /** The walk begins: the clock of its rate starts. */
  start(): void {
    this.started = Date.now();
  }

  update(progress: WalkProgress): void {
    this.#latest = progress;
    this.show(progress);
  }

  /** Items done per second since the walk started. */
  protected rate(now = Date.now()): number {
    return (this.#latest.done * 1000) / Math.max(1, now - this.started);
  }

  protected abstract show(progress: WalkProgress): void;

  /** Ends the display: on a terminal the bar is gone, and the line it held is empty for what follows. */
  abstract stop(): void;
}

/** `ownDirectories`: the service's own folders (lib/corpus/own-data.ts), which the walk leaves out and so the count too. */
export function progressReporter(
  sourcePath: string | null,
  log: Logger,
  ownDirectories: readonly string[] = [],
): ProgressReporter {
  return stderrLines.isTerminal && sourcePath !== null
    ? new ProgressBar(sourcePath, ownDirectories, stderrLines)
    : new ProgressLog(log);
}

/** The bar, on the bottom line of a terminal. */
class ProgressBar extends ProgressReporter {
  readonly #sourcePath: string;
  readonly #ownDirectories: readonly string[];
  readonly #terminal: TerminalLines;
  #redraw: NodeJS.Timeout | undefined;
  #counted: number | null = null;
  #drawnAt = 0;
  #stopped = false;

  constructor(sourcePath: string, ownDirectories: readonly string[], terminal: TerminalLines) {
    super();
    this.#sourcePath = sourcePath;
    this.#ownDirectories = ownDirectories;
    this.#terminal = terminal;
  }

  override start(): void {
    super.start();
    void countFiles(this.#sourcePath, this.#ownDirectories).then(
      (n) => {
        this.#counted = n;
        this.#draw();
      },
      () => {}, // the walk itself says what is wrong with the corpus
    );
    this.#redraw = setInterval(() => this.#draw(), REDRAW_MS).unref();
  }

  protected show(): void {
    if (Date.now() - this.#drawnAt >= DRAW_EVERY_MS) this.#draw();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#redraw);
    this.#terminal.clearStatus();
  }

  #draw(): void {
    const { seen, done, item } = this.latest;
    if (this.#stopped || (seen === 0 && this.#counted === null)) return;
    const now = Date.now();
    this.#drawnAt = now;
    const rate = this.rate(now);
    const perSecond = `${rate < 10 ? rate.toFixed(1) : Math.round(rate)}/s`;
    if (this.#counted === null) {
      this.#terminal.status(` ${done} items done | ${perSecond} | counting the corpus${itemSuffix(item)}`);
      return;
    }
    // Feed URLs, and files saved during the walk, are items the count did not see.
    const total = Math.max(this.#counted, seen);
    const filled = total === 0 ? BAR_WIDTH : Math.round((BAR_WIDTH * done) / total);
    const eta = rate > 0 ? duration((total - done) / rate) : '?';
    this.#terminal.status(
      ` ${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${done}/${total} items | ${perSecond} | ETA ${eta}` +
        itemSuffix(item),
    );
  }
}

/** A log line every few seconds, where no one watches a bar (a log file, a container). */
class ProgressLog extends ProgressReporter {
  readonly #log: Logger;
  #loggedAt = 0;

  constructor(log: Logger) {
    super();
    this.#log = log;
  }

  override start(): void {
    super.start();
    this.#loggedAt = this.started;
  }

  protected show({ seen, done, item }: WalkProgress): void {
    const now = Date.now();
    if (now - this.#loggedAt < LOG_EVERY_MS) return;
    this.#loggedAt = now;
    this.#log.info({ seen, done, perSecond: Math.round(this.rate(now)), item }, 'walk progress');
  }

  stop(): void {}
}

/** A large file written in batches shows its own progress: the items' count stands still meanwhile. */
function itemSuffix(item: WalkProgress['item']): string {
  return item === undefined ? '' : ` | ${item.path} ${item.percent} % (${item.chunks.toLocaleString('en-US')} chunks)`;
}

/** 42s, 3m05s, 2h07m. */
function duration(seconds: number): string {
  const s = Math.round(seconds);
  const two = (n: number) => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${two(Math.floor((s % 3600) / 60))}m`;
}

async function countFiles(sourcePath: string, exclude: readonly string[]): Promise<number> {
  let n = 0;
  for await (const _ of walkFiles(sourcePath, pino({ level: 'silent' }), { exclude })) n += 1;
  return n;
}
