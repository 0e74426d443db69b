// Markdown and plain text pass through: decoded as UTF-8 without its byte-order mark.

import type { Converted } from './types.ts';

export function decodeUtf8(bytes: Uint8Array): string {
  return new TextDecoder('utf-8', { ignoreBOM: false }).decode(bytes);
}

export function convertMarkdown(bytes: Uint8Array): Converted {
  const text = decodeUtf8(bytes);
  const heading = /^#[ \t]+(.+?)[ \t#]*$/m.exec(text);
  return { text, title: heading?.[1]?.trim() ?? null };
}

export function convertPlainText(bytes: Uint8Array): Converted {
  return { text: decodeUtf8(bytes), title: null };
}
