// Bytes to text for HTML: a byte-order mark wins, then a charset declared in the first 4 KB
// (<meta charset>, <meta http-equiv content="...; charset=">, or an XML declaration), as the
// HTML standard's prescan does. With neither, valid UTF-8 is taken as UTF-8 and anything else as
// windows-1252 (the web's legacy default), and the result says the charset was guessed. Text
// that was misread once already, before the page was served, is repaired after extraction.

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

/** UTF-8 read as Latin-1: a lead byte's letter, then one to three continuation bytes' signs. */
const MOJIBAKE = /[\u00c2-\u00f4][\u0080-\u00bf]{1,3}/g;
/** C1 control characters, which no text holds: their presence proves the text was misread. */
const C1_CONTROL = /[\u0080-\u009f]/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Text that was UTF-8 read as Latin-1 somewhere before the page was served ("itâ\u0080\u0099s")
 * read as it was written. Only in a text that holds a C1 control character, which nothing
 * written holds, so a real "É»" in a French quotation is left as it is.
 */
export function repairMojibake(text: string): string {
  if (!C1_CONTROL.test(text)) return text;
  return text.replace(MOJIBAKE, (run) => {
    try {
      return strictUtf8.decode(Uint8Array.from(run, (c) => c.charCodeAt(0)));
    } catch {
      return run;
    }
  });
}
