// The terminal a command's stderr goes to, shared by the log and one status line (the walk's
// progress bar). The status line is the bottom line and is redrawn in place; every other text
// is printed above it: the status line is cleared, the text written, the status line drawn
// again below it. Nothing moves the cursor up or saves and restores its position, so what has
// scrolled by is never written over, whatever the terminal's size.
//
// Writes are synchronous (a terminal stream is, in Node), so nothing written here is still on
// its way when the process exits.

const CLEAR_LINE = '\r\x1b[2K';

export class TerminalLines {
  readonly #stream: NodeJS.WriteStream;
  #status: string | null = null;

  constructor(stream: NodeJS.WriteStream) {
    this.#stream = stream;
  }

  get isTerminal(): boolean {
    return this.#stream.isTTY === true;
  }

  /** Prints whole lines (ending in a newline) above the status line. */
  print(text: string): void {
    this.#stream.write(this.#status === null ? text : `${CLEAR_LINE}${text}${this.#status}`);
  }

  /** Shows the status line, or replaces it; cut to the terminal's width, since a wrapped line could not be redrawn in place. */
  status(text: string): void {
    const width = Math.max(1, (this.#stream.columns || 80) - 1);
    this.#status = text.length > width ? text.slice(0, width) : text;
    this.#stream.write(`${CLEAR_LINE}${this.#status}`);
  }

  /** Removes the status line, leaving the cursor at the start of its now empty line. */
  clearStatus(): void {
    if (this.#status === null) return;
    this.#status = null;
    this.#stream.write(CLEAR_LINE);
  }
}

/** This process's stderr. */
export const stderrLines = new TerminalLines(process.stderr);
