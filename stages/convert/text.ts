// Markdown and plain text pass through, decoded by text-decode.ts (a byte-order mark, UTF-8, or
// the detected legacy encoding, with a warning when it had to guess). A large one is converted
// as a stream (TextStream): decoded a piece at a time as its bytes are read, never whole.

import { decodeText, TextStreamDecoder, type DecodingPlan } from './text-decode.ts';
import type { ConversionWarning, Converted } from './types.ts';

export function convertMarkdown(bytes: Uint8Array): Converted {
  const { text, warnings } = decodeText(bytes);
  const title = new MarkdownTitle();
  title.push(text);
  return { ...withWarnings(text, warnings), title: title.end() };
}

export function convertPlainText(bytes: Uint8Array): Converted {
  const { text, warnings } = decodeText(bytes);
  return { ...withWarnings(text, warnings), title: null };
}

const withWarnings = (text: string, warnings: ConversionWarning[]) =>
  warnings.length === 0 ? { text } : { text, warnings };

/** Markdown's title: the text of its first ATX heading line (`# Title`), else null. */
export class MarkdownTitle {
  /** The line not yet ended, while it may still be the heading; null once it cannot be. */
  #line: string | null = '';
  #title: string | null = null;

  /** Reads the next piece of the text (nothing, once the title is found). */
  push(piece: string): void {
    if (this.#title !== null) return;
    // The line terminators of a regular expression's `^` and `$` in multiline mode.
    const lines = piece.split(/[\n\r\u2028\u2029]/);
    const rest = lines.pop()!;
    for (const line of lines) {
      if (this.#line !== null && this.#heading(this.#line + line)) return;
      this.#line = '';
    }
    // Only a line that may be a heading is held: one starting with '#' (or too short to tell).
    this.#line = this.#line === null ? null : this.#line + rest;
    if (this.#line !== null && this.#line.length > 0 && !this.#line.startsWith('#')) this.#line = null;
  }

  /** The title found so far, or null. */
  get found(): string | null {
    return this.#title;
  }

  /** The text has ended: the title, or null. */
  end(): string | null {
    if (this.#title === null && this.#line !== null) this.#heading(this.#line);
    this.#line = null;
    return this.#title;
  }

  #heading(line: string): boolean {
    const heading = /^#[ \t]+(.+?)[ \t#]*$/.exec(line);
    if (heading === null) return false;
    this.#title = heading[1]!.trim();
    return true;
  }
}

/**
 * A markdown or plain-text file converted as its bytes are read (a large file is never held
 * whole): its text a piece at a time, its title as far as read so far, its warnings once ended.
 */
export class TextStream {
  readonly #decoder: TextStreamDecoder;
  readonly #title: MarkdownTitle | null;
  #bytes = 0;
  #chars = 0;
  #ended = false;

  constructor(plan: DecodingPlan, mediaType: 'text/markdown' | 'text/plain') {
    this.#decoder = new TextStreamDecoder(plan);
    this.#title = mediaType === 'text/markdown' ? new MarkdownTitle() : null;
  }

  /** The text of `bytes` (the file's, in order), a piece of text for each piece of bytes. */
  async *decode(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string, void, undefined> {
    for await (const piece of bytes) {
      this.#bytes += piece.length;
      yield this.#read(this.#decoder.push(piece));
    }
    const tail = this.#read(this.#decoder.end());
    this.#ended = true;
    this.#title?.end();
    if (tail.length > 0) yield tail;
  }

  /** The title as far as the text is read (final once it has ended). */
  get title(): string | null {
    return this.#title === null ? null : this.#ended ? this.#title.end() : this.#title.found;
  }

  get warnings(): ConversionWarning[] {
    return this.#decoder.warnings;
  }

  /** The share (0-1) of the file's `size` bytes that its text up to `chars` came from: exact once ended, else estimated. */
  shareBefore(chars: number, size: number): number {
    if (this.#ended) return this.#chars === 0 ? 1 : chars / this.#chars;
    return size === 0 || this.#chars === 0 ? 0 : Math.min(1, (chars * this.#bytes) / this.#chars / size);
  }

  #read(text: string): string {
    this.#chars += text.length;
    this.#title?.push(text);
    return text;
  }
}
