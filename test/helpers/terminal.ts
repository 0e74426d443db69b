// Runs the real `ingest` CLI on a pseudo-terminal, as a person at a terminal runs it, and shows
// what the terminal then holds. `script` (util-linux) gives the command a terminal of a fixed
// size; a terminal emulator (@xterm/headless) plays the captured bytes (cursor moves, line
// clears and all) into the lines a person would read.

import { spawn } from 'node:child_process';
import xterm from '@xterm/headless';
import { BIN } from './cli.ts';

export const COLUMNS = 100;
const ROWS = 30;

export interface TerminalRun {
  /** Exit status of the command (the shell's `$?`), from a marker line printed after it. */
  status: number | null;
  /** Every line the terminal holds, scrollback first, a line wrapped over rows joined again, trailing blanks trimmed. */
  lines: string[];
  /** The raw bytes written to the terminal. */
  raw: string;
}

export interface TerminalSession {
  /** Types into the terminal (`\x03` is Ctrl-C: the terminal signals the foreground processes). */
  type(keys: string): void;
  /** Resolves once the terminal has shown text matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves once the command and its terminal have ended. */
  ended: Promise<TerminalRun>;
}

const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/** Starts `ingest ARGS` on a new pseudo-terminal of COLUMNS x ROWS; a line `[exit N]` follows its end. */
export function onTerminal(args: string[], env: Record<string, string>): TerminalSession {
  // Ctrl-C signals the shell too: its trap keeps it alive to print the marker (and is not inherited).
  const ingest = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  const command = `trap : INT; stty cols ${COLUMNS} rows ${ROWS}; ${ingest}; echo "[exit $?]"`;
  const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm-256color', ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let raw = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (raw += chunk));
  // A render that fails rejects the run, rather than leaving it pending forever.
  const ended = new Promise<TerminalRun>((resolve, reject) =>
    child.on('close', () => {
      render(raw).then((lines) => {
        const marker = lines.findLast((line) => /^\[exit \d+\]$/.test(line));
        resolve({ status: marker === undefined ? null : Number(marker.slice(6, -1)), lines, raw });
      }, reject);
    }),
  );
  return {
    type: (keys) => child.stdin.write(keys),
    async waitFor(pattern, timeoutMs = 120_000) {
      for (const end = Date.now() + timeoutMs; !pattern.test(raw); await new Promise((r) => setTimeout(r, 50)))
        if (Date.now() > end)
          throw new Error(`the terminal never showed ${pattern}:\n${(await render(raw)).join('\n')}`);
    },
    ended,
  };
}

/** What a terminal of COLUMNS x ROWS holds after these bytes: every line, scrollback included. */
export async function render(bytes: string): Promise<string[]> {
  const terminal = new xterm.Terminal({ cols: COLUMNS, rows: ROWS, scrollback: 100_000, allowProposedApi: true });
  // `script` hands over the terminal's output as the terminal sent it: "\n" already as "\r\n".
  await new Promise<void>((resolve) => terminal.write(bytes, resolve));
  const buffer = terminal.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buffer.length; i++) {
    const row = buffer.getLine(i)!;
    // A row the terminal wrapped continues the line above; a row wrapped onto the next is whole, blanks and all.
    const text = row.translateToString(!buffer.getLine(i + 1)?.isWrapped);
    if (row.isWrapped && lines.length > 0) lines[lines.length - 1] += text;
    else lines.push(text);
  }
  terminal.dispose();
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines;
}
