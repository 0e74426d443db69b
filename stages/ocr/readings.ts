// OCR readings kept, so that a byte-identical copy is not read twice (docs/DECISIONS.md "Scanned
// documents read", "A copy is not read twice"): in the process, the readings in flight (two
// copies at once share one) and the last 16 MB of text read; in the state store, when the
// converter has one (the walk's), so that a copy met by another process or by a later walk costs
// no OCR either. The store keeps them in a fixed number of slots chosen by the reading's key, a
// newer reading taking an older one's slot: however many scans are walked, the store holds at
// most SLOTS readings of at most MAX_KEPT_CHARS each, and no index that two processes could both
// rewrite. A walk that reads every scan again (--full-reprocess, --read-scans) takes only its own
// readings.

import type { StateStore } from '../../lib/state/store.ts';

/** What a reading holds of each page: its text at least (index.ts OcrPage). */
interface ReadPage {
  text: string;
}

/** Where readings outlive the process: the state store's memos. */
export type ReadingStore = Pick<StateStore, 'getMemo' | 'putMemo'>;

/** Who asks for a reading: the walk (its op_id) and whether it reads every scan again. */
export interface ReadingAsk {
  opId?: string;
  readAgain?: boolean;
}

/** Slots of the state store that hold readings. */
export const SLOTS = 8192;
/** A reading with more text than this (some 250 dense pages) is not kept in the store. */
export const MAX_KEPT_CHARS = 1024 * 1024;
/** Characters of text kept in the process. */
const KEPT_IN_PROCESS_CHARS = 16 * 1024 * 1024;

interface StoredReading<Page> {
  key: string;
  opId: string | null;
  pages: Page[];
}

interface Entry<Page> {
  pages: Promise<Page[]>;
  opId: string | null;
  chars: number;
}

export class Readings<Page extends ReadPage> {
  readonly #store: ReadingStore | null;
  /** Oldest first. */
  readonly #inProcess = new Map<string, Entry<Page>>();
  #keptChars = 0;

  constructor(store: ReadingStore | null) {
    this.#store = store;
  }

  /** The reading of `key` kept from before, if the asker may take it. */
  async kept(key: string, ask: ReadingAsk): Promise<Page[] | undefined> {
    const own = this.#inProcess.get(key);
    if (own !== undefined && usable(own.opId, ask)) return own.pages;
    if (this.#store === null) return undefined;
    const stored = (await this.#store.getMemo(slotKey(key))) as StoredReading<Page> | undefined;
    return stored?.key === key && usable(stored.opId, ask) ? stored.pages : undefined;
  }

  /** Reads `key` with `read`, the reading shared with a copy asking meanwhile and kept once done. */
  async read(key: string, ask: ReadingAsk, read: () => Promise<Page[]>): Promise<Page[]> {
    const entry: Entry<Page> = { pages: read(), opId: ask.opId ?? null, chars: 0 };
    const replaced = this.#inProcess.get(key);
    if (replaced !== undefined) this.#keptChars -= replaced.chars;
    this.#inProcess.delete(key);
    this.#inProcess.set(key, entry);
    let pages: Page[];
    try {
      pages = await entry.pages;
    } catch (error) {
      // A failure is the document's own, and not kept: the next walk tries again.
      if (this.#inProcess.get(key) === entry) this.#inProcess.delete(key);
      throw error;
    }
    entry.chars = pages.reduce((sum, p) => sum + p.text.length, 0);
    this.#keptChars += entry.chars;
    for (const [oldest, { chars }] of this.#inProcess) {
      if (this.#keptChars <= KEPT_IN_PROCESS_CHARS) break;
      this.#inProcess.delete(oldest);
      this.#keptChars -= chars;
    }
    if (this.#store !== null && entry.chars <= MAX_KEPT_CHARS) {
      await this.#store.putMemo(slotKey(key), { key, opId: entry.opId, pages } satisfies StoredReading<Page>);
    }
    return pages;
  }
}

/** A reading kept is taken unless the asker reads every scan again and did not read this one. */
const usable = (opId: string | null, ask: ReadingAsk) => ask.readAgain !== true || opId === (ask.opId ?? null);

/** The state store's memo key of the slot that `key` (hex) falls in. */
export const slotKey = (key: string) => `ocr:slot:${Number.parseInt(key.slice(0, 8), 16) % SLOTS}`;
