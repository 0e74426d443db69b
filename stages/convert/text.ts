// Markdown and plain text pass through, decoded by text-decode.ts (a byte-order mark, UTF-8, or
// the detected legacy encoding, with a warning when it had to guess).

import { decodeText } from './text-decode.ts';
import type { Converted } from './types.ts';

function decoded(bytes: Uint8Array): Pick<Converted, 'text' | 'warnings'> {
  const { text, warnings } = decodeText(bytes);
  return warnings.length === 0 ? { text } : { text, warnings };
}

export function convertMarkdown(bytes: Uint8Array): Converted {
  const converted = decoded(bytes);
  const heading = /^#[ \t]+(.+?)[ \t#]*$/m.exec(converted.text);
  return { ...converted, title: heading?.[1]?.trim() ?? null };
}

export function convertPlainText(bytes: Uint8Array): Converted {
  return { ...decoded(bytes), title: null };
}
