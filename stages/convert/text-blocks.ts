// The form blocks of a document converted to text (PDF, Markdown, HTML, plain text): its lines.
// Apart from layout.ts, whose DOCX and XLSX readers the walk's process never needs (they run in
// the converter's children and the bid-worker): importing them cost a no-op walk some 300 ms of
// start-up (bench/README.md "The first walk").

import type { FormBlock } from './types.ts';

/** The non-blank lines of converted text, numbered from 1. */
export function textBlocks(text: string): FormBlock[] {
  return text
    .split('\n')
    .flatMap((line, i) =>
      line.trim() === ''
        ? []
        : [{ address: `l${i + 1}`, text: line.trim(), location: { kind: 'text_line' as const, line: i + 1 } }],
    );
}
