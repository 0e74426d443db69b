// Plain text from an element subtree, readable without the markup: blocks separated by blank
// lines, <br> as a line break, headings marked with #, list items with "- ", table rows with
// their cells joined by " | " (a layout table, whose cells hold blocks, reads as blocks).

import { Element, LINE_BREAK } from './tree.ts';

const HEADING = /^h([1-6])$/;

class Writer {
  readonly blocks: string[] = [];
  private line = '';
  private prefix = '';
  /** Inside a table cell, blocks and line breaks only separate words: the row is one line. */
  flat = false;

  text(text: string): void {
    this.line += text;
  }

  lineBreak(): void {
    this.line += this.flat ? ' ' : '\n';
  }

  /** Starts a block; a marker ("# ", "- ") goes on its first line, even if a nested block has it. */
  startBlock(prefix: string): void {
    if (this.flat) return this.text(' ');
    this.flush();
    if (prefix !== '') this.prefix = prefix;
  }

  endBlock(): void {
    if (this.flat) return this.text(' ');
    this.flush();
    this.prefix = '';
  }

  flush(): void {
    if (this.line === '') return;
    const lines: string[] = [];
    for (const raw of this.line.split('\n')) {
      const line = raw.replace(/\s+/g, ' ').trim();
      if (line !== '') lines.push(line);
    }
    this.line = '';
    if (lines.length === 0) return;
    this.blocks.push(this.prefix + lines.join('\n'));
    this.prefix = '';
  }

  /** The running text so far as one line, taken out of the writer. */
  takeLine(): string {
    const line = this.line.replace(/\s+/g, ' ').trim();
    this.line = '';
    return line;
  }
}

export interface RenderOptions {
  /** Subtrees to leave out (boilerplate, link lists). */
  skip(element: Element): boolean;
}

export function renderText(root: Element, options: RenderOptions): string[] {
  const writer = new Writer();
  walk(root, writer, options);
  writer.flush();
  return writer.blocks;
}

function walk(element: Element, writer: Writer, options: RenderOptions): void {
  for (const child of element.children) {
    if (typeof child === 'string') {
      writer.text(child);
    } else if (child === LINE_BREAK) {
      writer.lineBreak();
    } else if (options.skip(child)) {
      // A dropped inline element still separates the words around it.
      writer.text(' ');
    } else if (child.tag === 'tr' && isDataRow(child)) {
      writer.flush();
      const cells: string[] = [];
      for (const cell of child.children) {
        if (typeof cell === 'string' || options.skip(cell)) continue;
        writer.flat = true;
        walk(cell, writer, options);
        writer.flat = false;
        const text = writer.takeLine();
        if (text !== '') cells.push(text);
      }
      if (cells.length > 0) {
        writer.text(cells.join(' | '));
        writer.flush();
      }
    } else if (child.block) {
      const level = HEADING.exec(child.tag)?.[1];
      writer.startBlock(level !== undefined ? `${'#'.repeat(Number(level))} ` : child.tag === 'li' ? '- ' : '');
      walk(child, writer, options);
      writer.endBlock();
    } else {
      walk(child, writer, options);
    }
  }
}

/**
 * A row of a data table: every cell holds running text, or one paragraph of it (word
 * processors wrap cell text in <p>). A layout table's cells hold several blocks or tables.
 */
function isDataRow(row: Element): boolean {
  for (const cell of row.children) {
    if (typeof cell === 'string' || cell === LINE_BREAK) continue;
    if (cell.tag !== 'td' && cell.tag !== 'th') return false;
    if (cell.chars !== cell.inlineChars && textBlocks(cell, 2) > 1) return false;
  }
  return true;
}

/** Blocks with text of their own under an element (a table counts as many), counted up to limit. */
function textBlocks(element: Element, limit: number): number {
  let count = 0;
  for (const child of element.children) {
    if (typeof child === 'string' || !child.block) continue;
    if (child.tag === 'table') return limit;
    if (child.inlineChars > 0) count += 1;
    count += textBlocks(child, limit - count);
    if (count >= limit) return limit;
  }
  return count;
}
