// A migration's SQL as PostgreSQL reads it, less what PostgreSQL ignores: comments (`--` to the
// end of the line, and `/* */`, nested as PostgreSQL nests them) dropped, and every run of
// whitespace or comments between tokens made one space. String literals, quoted identifiers and
// dollar-quoted bodies are kept byte for byte: a `--` or a line break inside them is data. The
// migration checksum is taken over this text, so editing a comment never changes it.
//
// The lexical rules are PostgreSQL's with standard_conforming_strings on (the default since 9.1):
// only an E'' string takes backslash escapes. The text this returns is part of every recorded
// checksum: changing what it keeps or drops changes the checksum of every applied migration.

/** PostgreSQL's whitespace; other Unicode spaces are identifier characters outside literals. */
const WHITESPACE = new Set([' ', '\t', '\n', '\r', '\f', '\v']);
/** A character that continues an identifier (PostgreSQL takes any non-ASCII one), so a `$` after it opens nothing. */
const IDENTIFIER_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;
/** The opening of a dollar-quoted body: `$$` or `$tag$`, the tag an identifier without `$`. */
const DOLLAR_QUOTE = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

export function sqlWithoutComments(sql: string): string {
  let out = '';
  let spaceOwed = false;
  let i = 0;
  while (i < sql.length) {
    if (WHITESPACE.has(sql[i]!)) {
      spaceOwed = true;
      i += 1;
    } else if (sql.startsWith('--', i)) {
      spaceOwed = true;
      i = lineCommentEnd(sql, i);
    } else if (sql.startsWith('/*', i)) {
      spaceOwed = true;
      i = blockCommentEnd(sql, i);
    } else {
      const end = tokenEnd(sql, i);
      if (spaceOwed && out !== '') out += ' ';
      spaceOwed = false;
      out += sql.slice(i, end);
      i = end;
    }
  }
  return out;
}

function lineCommentEnd(sql: string, start: number): number {
  const newline = sql.slice(start).search(/[\n\r]/);
  return newline === -1 ? sql.length : start + newline;
}

function blockCommentEnd(sql: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    if (sql.startsWith('/*', i)) {
      depth += 1;
      i += 2;
    } else if (sql.startsWith('*/', i)) {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else {
      i += 1;
    }
  }
  return sql.length;
}

/**
 * The end of the token at `start` that is not whitespace or a comment: a whole literal, quoted
 * identifier or dollar-quoted body when one opens there, else the one character.
 */
function tokenEnd(sql: string, start: number): number {
  const ch = sql[start]!;
  const follows = (back: number): boolean => start - back >= 0 && IDENTIFIER_CHAR.test(sql[start - back]!);
  if (ch === "'") {
    const escapes = (sql[start - 1] === 'e' || sql[start - 1] === 'E') && !follows(2);
    return quotedEnd(sql, start, "'", escapes);
  }
  if (ch === '"') return quotedEnd(sql, start, '"', false);
  if (ch === '$' && !follows(1)) {
    DOLLAR_QUOTE.lastIndex = start;
    const open = DOLLAR_QUOTE.exec(sql);
    if (open !== null) {
      const close = sql.indexOf(open[0], start + open[0].length);
      return close === -1 ? sql.length : close + open[0].length;
    }
  }
  return start + 1;
}

/** The end of a quoted run: a doubled quote stays inside, as does a backslashed character in an E'' string. */
function quotedEnd(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    if (backslashEscapes && sql[i] === '\\') i += 2;
    else if (sql[i] !== quote) i += 1;
    else if (sql[i + 1] === quote) i += 2;
    else return i + 1;
  }
  return sql.length;
}
