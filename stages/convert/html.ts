// The in-process HTML cleaner (SPEC.md 1 stage 2; POST /extract uses it too). This is the
// basic version: it keeps every visible text block in document order, readable as plain text
// (headings marked with #, list items with -, table cells joined by |, blank lines between
// blocks), and drops what is never content (script, style, template, hidden elements). The
// main-content extraction that scores pages by text and link density is a later step.
//
// It never throws: any input, however malformed, yields a verdict.

import { Parser } from 'htmlparser2';

export type HtmlVerdict = 'ok' | 'thin' | 'empty' | 'not_html';

export interface CleanedHtml {
  text: string;
  verdict: HtmlVerdict;
  warnings: string[];
  title?: string | null;
}

/** Shorter than this, the text is too little to be an article. */
const THIN_CHARS = 200;

const DROPPED = new Set(['script', 'style', 'template', 'noscript', 'head', 'svg', 'math', 'iframe', 'object', 'canvas', 'select', 'button']);
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr']);
const BLOCKS = new Set([
  'p', 'div', 'section', 'article', 'main', 'header', 'footer', 'nav', 'aside', 'blockquote', 'pre', 'figure', 'figcaption',
  'ul', 'ol', 'dl', 'dt', 'dd', 'table', 'thead', 'tbody', 'tfoot', 'form', 'fieldset', 'address', 'details', 'summary',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'li', 'tr', 'body', 'html', 'hr', 'caption',
]);

function isHidden(attributes: Record<string, string>): boolean {
  if ('hidden' in attributes) return true;
  if (attributes['aria-hidden'] === 'true') return true;
  const style = (attributes.style ?? '').replace(/\s+/g, '').toLowerCase();
  return style.includes('display:none') || style.includes('visibility:hidden');
}

/** Decodes bytes by BOM or declared charset, else UTF-8 (and says so). */
function decode(input: Uint8Array, warnings: string[]): string {
  if (input[0] === 0xef && input[1] === 0xbb && input[2] === 0xbf) return new TextDecoder('utf-8').decode(input);
  if (input[0] === 0xff && input[1] === 0xfe) return new TextDecoder('utf-16le').decode(input);
  if (input[0] === 0xfe && input[1] === 0xff) return new TextDecoder('utf-16be').decode(input);
  const head = new TextDecoder('latin1').decode(input.subarray(0, 4096));
  const declared = /<meta[^>]+charset\s*=\s*["']?\s*([\w-]+)/i.exec(head)?.[1];
  if (declared !== undefined) {
    try {
      return new TextDecoder(declared.toLowerCase()).decode(input);
    } catch {
      warnings.push('charset_unknown');
    }
  } else {
    warnings.push('charset_guessed');
  }
  return new TextDecoder('utf-8').decode(input);
}

export function cleanHtml(input: string | Uint8Array): CleanedHtml {
  const warnings: string[] = [];
  try {
    const html = typeof input === 'string' ? input : decode(input, warnings);
    if (!/<[a-zA-Z!/?]/.test(html.slice(0, 65_536)) || html.includes('\u0000')) {
      return { text: '', verdict: 'not_html', warnings, title: null };
    }
    return extract(html, warnings);
  } catch {
    return { text: '', verdict: 'empty', warnings: [...warnings, 'parse_failed'], title: null };
  }
}

function extract(html: string, warnings: string[]): CleanedHtml {
  const blocks: string[] = [];
  let line = '';
  let title = '';
  let inTitle = false;
  // Depth inside dropped or hidden subtrees; text there is ignored.
  let skipDepth = 0;
  const stack: { name: string; skip: boolean }[] = [];
  let rowCells: string[] | null = null;
  let cell: string | null = null;
  let prefix = '';

  // Ends the current block; <br> breaks inside it become separate lines of the block.
  const flush = () => {
    const lines = line.split('\n').map((l) => l.replace(/[ \t\f\v\r\u00a0]+/g, ' ').trim()).filter((l) => l !== '');
    if (lines.length > 0) blocks.push(prefix + lines.join('\n'));
    line = '';
    prefix = '';
  };

  const parser = new Parser(
    {
      onopentag(name, attributes) {
        const skip = skipDepth > 0 || DROPPED.has(name) || isHidden(attributes);
        if (!VOID.has(name)) stack.push({ name, skip });
        // <title> lives in the dropped <head>: its text is read for the title only.
        if (name === 'title') inTitle = true;
        if (skip) {
          if (!VOID.has(name)) skipDepth += 1;
          return;
        }
        if (name === 'br') {
          if (cell !== null) cell += ' ';
          else line += '\n';
          return;
        }
        if (name === 'tr') rowCells = [];
        else if ((name === 'td' || name === 'th') && rowCells !== null) cell = '';
        else if (BLOCKS.has(name)) {
          flush();
          if (/^h[1-6]$/.test(name)) prefix = `${'#'.repeat(Number(name[1]))} `;
          else if (name === 'li') prefix = '- ';
        }
      },
      ontext(text) {
        if (inTitle) title += text;
        if (skipDepth > 0) return;
        if (cell !== null) cell += text;
        else line += text;
      },
      onclosetag(name) {
        if (name === 'title') inTitle = false;
        if (VOID.has(name)) return;
        // Unwind to the matching open tag; htmlparser2 closes implied tags for us.
        const top = stack.pop();
        if (top?.skip) {
          skipDepth = Math.max(0, skipDepth - 1);
          return;
        }
        if ((name === 'td' || name === 'th') && rowCells !== null && cell !== null) {
          rowCells.push(cell.replace(/\s+/g, ' ').trim());
          cell = null;
        } else if (name === 'tr' && rowCells !== null) {
          flush();
          const cells = rowCells.filter((c) => c !== '');
          if (cells.length > 0) blocks.push(cells.join(' | '));
          rowCells = null;
        } else if (BLOCKS.has(name)) {
          flush();
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  flush();

  const text = blocks.join('\n\n');
  const cleanTitle = title.replace(/\s+/g, ' ').trim() || (/^# (.+)$/m.exec(text)?.[1] ?? null);
  if (text === '') return { text, verdict: 'empty', warnings, title: cleanTitle };
  if (text.length < THIN_CHARS) return { text, verdict: 'thin', warnings, title: cleanTitle };
  return { text, verdict: 'ok', warnings, title: cleanTitle };
}
