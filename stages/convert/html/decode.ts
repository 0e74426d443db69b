// Bytes to text for HTML: a byte-order mark wins, then a charset declared in the first 4 KB
// (<meta charset>, <meta http-equiv content="...; charset=">, or an XML declaration), as the
// HTML standard's prescan does. With neither, valid UTF-8 is taken as UTF-8 and anything else as
// windows-1252 (the web's legacy default), and the result says the charset was guessed.

export interface Decoded {
  text: string;
  /** 'charset_guessed' (nothing declared) or 'charset_unknown' (declared, not supported). */
  warning: 'charset_guessed' | 'charset_unknown' | null;
}

const PRESCAN_BYTES = 4096;
const DECLARED = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)|<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)/i;

export function decodeHtml(bytes: Uint8Array): Decoded {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf)
    return { text: new TextDecoder('utf-8').decode(bytes), warning: null };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { text: new TextDecoder('utf-16le').decode(bytes), warning: null };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { text: new TextDecoder('utf-16be').decode(bytes), warning: null };
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, PRESCAN_BYTES));
  const match = DECLARED.exec(head);
  const declared = match?.[1] ?? match?.[2];
  if (declared !== undefined) {
    const label = declared.toLowerCase();
    // A page served as bytes cannot really be UTF-16 if its ASCII declaration was readable.
    const decoder = supported(label.startsWith('utf-16') ? 'utf-8' : label);
    if (decoder !== null) return { text: decoder.decode(bytes), warning: null };
    return { text: guess(bytes), warning: 'charset_unknown' };
  }
  return { text: guess(bytes), warning: 'charset_guessed' };
}

function supported(label: string): InstanceType<typeof TextDecoder> | null {
  try {
    return new TextDecoder(label);
  } catch {
    return null;
  }
}

function guess(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}
