// Bytes of a text file (markdown, plain text) to text as the person who wrote it would read it
// (docs/DECISIONS.md "Text files in other encodings"): a byte-order mark wins (UTF-8, UTF-16 LE
// or BE); bytes that are valid UTF-8 are UTF-8; UTF-16 without a mark shows by its zero bytes;
// anything else is decoded in the encoding chardet finds most likely, and without a usable
// guess as windows-1252. A text that needed a guess, or that holds bytes its encoding could not
// decode (now U+FFFD), says so in its warnings. This module is chardet's one facade.

import chardet from 'chardet';
import type { ConversionWarning } from './types.ts';

export interface DecodedText {
  text: string;
  warnings: ConversionWarning[];
}

/** Encodings whose every byte sequence decodes: chardet's guess counts at any confidence. */
const SINGLE_BYTE: Readonly<Record<string, string>> = {
  'ISO-8859-1': 'windows-1252', // as browsers read it: its C1 range holds windows-1252's signs
  'ISO-8859-2': 'iso-8859-2',
  'ISO-8859-5': 'iso-8859-5',
  'ISO-8859-6': 'iso-8859-6',
  'ISO-8859-7': 'iso-8859-7',
  'ISO-8859-8': 'iso-8859-8',
  'ISO-8859-9': 'windows-1254',
  'windows-1250': 'windows-1250',
  'windows-1251': 'windows-1251',
  'windows-1252': 'windows-1252',
  'windows-1253': 'windows-1253',
  'windows-1254': 'windows-1254',
  'windows-1255': 'windows-1255',
  'windows-1256': 'windows-1256',
  'windows-1257': 'windows-1257',
  'windows-1258': 'windows-1258',
  'windows-874': 'windows-874',
  'KOI8-R': 'koi8-r',
};

/**
 * Multi-byte encodings: chardet's detectors for these are sure of real text (confidence 100 on
 * a sentence) and guess them at 10 or so for single-byte text, so they count only when sure.
 */
const MULTI_BYTE: Readonly<Record<string, string>> = {
  Shift_JIS: 'shift_jis',
  'EUC-JP': 'euc-jp',
  'ISO-2022-JP': 'iso-2022-jp',
  GB18030: 'gb18030',
  Big5: 'big5',
  'EUC-KR': 'euc-kr',
};
const MULTI_BYTE_MIN_CONFIDENCE = 50;

/** Without any usable guess: the commonest legacy encoding of Western text, in which every byte decodes. */
const LAST_RESORT = 'windows-1252';

/** Bytes read for the UTF-16 check: enough to see the pattern, cheap on a large file. */
const UTF16_SAMPLE_BYTES = 4096;
/** Bytes chardet reads: it takes about 0.1 s for 64 KB and grows with the length (9 s for 7.5 MB). */
const DETECT_SAMPLE_BYTES = 64 * 1024;

export function decodeText(bytes: Uint8Array): DecodedText {
  const probe = new EncodingProbe();
  probe.push(bytes);
  const decoder = new TextStreamDecoder(probe.finish());
  const text = decoder.push(bytes) + decoder.end();
  return { text, warnings: decoder.warnings };
}

/** How a text file is to be decoded: what its whole bytes showed (EncodingProbe). */
export interface DecodingPlan {
  encoding: string;
  /** Every byte sequence is known to decode (valid UTF-8): no replacement to watch for. */
  valid: boolean;
  warnings: ConversionWarning[];
}

/**
 * Reads a file's bytes a piece at a time to choose its encoding, which needs all of them: one
 * invalid UTF-8 sequence anywhere makes the whole file a legacy encoding. It holds the first
 * DETECT_SAMPLE_BYTES (the mark, the UTF-16 pattern and chardet's sample are all in there) and
 * a UTF-8 check that carries a split sequence across pieces.
 */
export class EncodingProbe {
  readonly #head = new Uint8Array(DETECT_SAMPLE_BYTES);
  #headLength = 0;
  #utf8: InstanceType<typeof TextDecoder> | null = new TextDecoder('utf-8', { fatal: true });

  push(piece: Uint8Array): void {
    if (this.#headLength < DETECT_SAMPLE_BYTES) {
      const taken = piece.subarray(0, DETECT_SAMPLE_BYTES - this.#headLength);
      this.#head.set(taken, this.#headLength);
      this.#headLength += taken.length;
    }
    if (this.#utf8 === null) return;
    try {
      this.#utf8.decode(piece, { stream: true });
    } catch {
      this.#utf8 = null;
    }
  }

  /** The bytes have all been pushed: how to decode them. */
  finish(): DecodingPlan {
    const head = this.#head.subarray(0, this.#headLength);
    const marked = byteOrderMark(head);
    // TextDecoder drops the mark itself.
    if (marked !== null) return { encoding: marked, valid: false, warnings: [] };
    const unmarked = utf16WithoutMark(head);
    if (unmarked !== null)
      return {
        encoding: unmarked,
        valid: false,
        warnings: [fallback(`no byte-order mark, but every other byte is zero: read as ${unmarked.toUpperCase()}`)],
      };
    if (this.#validUtf8()) return { encoding: 'utf-8', valid: true, warnings: [] };
    const guess = guessEncoding(head);
    return {
      encoding: guess.encoding,
      valid: false,
      warnings: [
        fallback(
          guess.confidence === null
            ? `not UTF-8, and no encoding was recognised: read as ${guess.encoding}`
            : `not UTF-8: read as ${guess.encoding} (detected with confidence ${guess.confidence}%)`,
        ),
      ],
    };
  }

  #validUtf8(): boolean {
    try {
      // A sequence cut off by the end of the file is invalid.
      this.#utf8?.decode();
      return this.#utf8 !== null;
    } catch {
      return false;
    }
  }
}

/**
 * Decodes a file's bytes a piece at a time as its plan says; a sequence split across pieces
 * decodes as if whole. Undecodable sequences become U+FFFD and add the replacement_characters
 * warning, known once every piece is decoded: a second, strict decoder watches for them.
 */
export class TextStreamDecoder {
  readonly #plan: DecodingPlan;
  readonly #decoder: InstanceType<typeof TextDecoder>;
  /** A strict decoder watching for an undecodable sequence; not needed when the plan rules them out. */
  #strict: InstanceType<typeof TextDecoder> | null;
  #undecodable = false;
  #replaced = 0;
  #ended = false;

  constructor(plan: DecodingPlan) {
    this.#plan = plan;
    this.#decoder = new TextDecoder(plan.encoding);
    this.#strict = plan.valid ? null : new TextDecoder(plan.encoding, { fatal: true });
  }

  push(piece: Uint8Array): string {
    this.#watch(piece);
    return this.#counted(this.#decoder.decode(piece, { stream: true }));
  }

  /** The text of a sequence left unfinished at the end (U+FFFD), or ''. */
  end(): string {
    this.#watch();
    this.#ended = true;
    return this.#counted(this.#decoder.decode());
  }

  /** The plan's warnings, and one for undecodable sequences; complete once ended. */
  get warnings(): ConversionWarning[] {
    if (!this.#ended) throw new Error('the text has not ended');
    if (!this.#undecodable) return this.#plan.warnings;
    const replaced = this.#replaced;
    return [
      ...this.#plan.warnings,
      {
        name: 'replacement_characters',
        message: `${replaced} undecodable byte sequence${replaced === 1 ? '' : 's'} in ${this.#plan.encoding} became U+FFFD`,
      },
    ];
  }

  #watch(piece?: Uint8Array): void {
    try {
      if (piece === undefined) this.#strict?.decode();
      else this.#strict?.decode(piece, { stream: true });
    } catch {
      this.#undecodable = true;
      this.#strict = null;
    }
  }

  /** Counts every U+FFFD (as the warning did when it counted them in the whole text). */
  #counted(text: string): string {
    this.#replaced += text.match(/\uFFFD/g)?.length ?? 0;
    return text;
  }
}

function byteOrderMark(bytes: Uint8Array): 'utf-8' | 'utf-16le' | 'utf-16be' | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return null;
}

/**
 * UTF-16 without a mark is valid UTF-8 when its text is ASCII, every other byte a zero: no text
 * file holds NUL characters, so a zero in at least half of one parity's bytes, and none in the
 * other's, is UTF-16 (LE when the zeros follow their letters).
 */
function utf16WithoutMark(bytes: Uint8Array): 'utf-16le' | 'utf-16be' | null {
  const sample = bytes.subarray(0, Math.min(bytes.length, UTF16_SAMPLE_BYTES) & ~1);
  if (sample.length < 4) return null;
  const zeros = [0, 0];
  for (let i = 0; i < sample.length; i++) if (sample[i] === 0) zeros[i & 1]! += 1;
  const half = sample.length / 4;
  if (zeros[1]! >= half && zeros[0] === 0) return 'utf-16le';
  if (zeros[0]! >= half && zeros[1] === 0) return 'utf-16be';
  return null;
}

/** chardet's most likely encoding that counts (see SINGLE_BYTE, MULTI_BYTE), else LAST_RESORT. */
function guessEncoding(bytes: Uint8Array): { encoding: string; confidence: number | null } {
  for (const match of chardet.analyse(bytes.subarray(0, DETECT_SAMPLE_BYTES))) {
    if (match.confidence <= 0) continue;
    const single = SINGLE_BYTE[match.name];
    if (single !== undefined) return { encoding: single, confidence: match.confidence };
    const multi = MULTI_BYTE[match.name];
    if (multi !== undefined && match.confidence >= MULTI_BYTE_MIN_CONFIDENCE)
      return { encoding: multi, confidence: match.confidence };
  }
  return { encoding: LAST_RESORT, confidence: null };
}

const fallback = (message: string): ConversionWarning => ({ name: 'encoding_fallback', message });
