// What a walk of the corpus as it stands would ask the model, less what the memo already holds
// (docs/OPERATIONS.md "Half price for a backfill"). The corpus is enumerated as a walk enumerates
// it; an item the outer memo clears (by stat, or by its bytes' hash) asks nothing; any other is
// converted and windowed as the walk converts and windows it (engine/item/file.ts), and each
// (extractor, window) a walk would ask (stages/extract/index.ts windowsAsked) becomes a request
// under exactly the memo key the walk looks up. The item memos are the walk's: the stamp of a
// touched but unchanged file is left for it to refresh (the one write is the store's own, an
// entry that does not read back removed as any reader removes it), and a file that fails to
// convert is left for the walk to fail.
//
// Feed URLs are not planned: their pages are fetched by the walk, and may change between a
// prefill and the walk that would use its answers.

import type { Config } from '../../lib/config.ts';
import type { FileItem } from '../../lib/corpus/files.ts';
import { walkFiles } from '../../lib/corpus/files.ts';
import { ownDataDirectories } from '../../lib/corpus/own-data.ts';
import { anthropicMeter } from '../../lib/llm/budget-fetch.ts';
import type { LlmRequest } from '../../lib/llm/client.ts';
import { PROMPTS } from '../../lib/llm/prompts.ts';
import { extractorMemoKey, extractorRequest, fitsSchema } from '../../lib/llm/run-extractor.ts';
import type { Logger } from '../../lib/log.ts';
import { fileIdentity } from '../../lib/state/keys.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { mediaTypeFor, type Converter, type MediaType } from '../../stages/convert/index.ts';
import { ALL_EXTRACTORS, windowsAsked, type ExtractorName } from '../../stages/extract/index.ts';
import { admitFile, unchangedByStat } from '../item/admit.ts';
import { convertedText, isText, type ConvertedText } from '../item/file.ts';
import { textBatches } from '../item/item-rows.ts';

/** One answer to buy. */
export interface PrefillRequest {
  /** The memo key a walk looks the answer up under (lib/llm/run-extractor.ts extractorMemoKey). */
  key: string;
  /** The batch entry's custom_id: the key's digest (64 hex characters, within the vendor's limit). */
  customId: string;
  extractor: ExtractorName;
  params: LlmRequest;
  /** Input tokens, estimated before the vendor counts them. */
  inputTokens: number;
}

export interface PlanDeps {
  config: Pick<Config, 'convert' | 'walk'> & Parameters<typeof ownDataDirectories>[0];
  store: StateStore;
  converter: Converter;
  /** The extraction model and its LLM identity: the memo key's. */
  model: string;
  identity: string;
  log: Logger;
}

export interface PlanCounts {
  /** Files of a type the walk reads. */
  files: number;
  /** Files the outer memo clears: the walk asks nothing about them. */
  unchanged: number;
  /** Files a walk would extract. */
  changed: number;
  /** Files that could not be read or converted: the walk meets them and fails them. */
  unreadable: number;
  /** (extractor, window) pairs the changed files ask, repeats across files counted once. */
  asked: number;
  /** Of those, answered in the memo already. */
  memoised: number;
}

const MEMO_KEY_PREFIX = 'extract:';

/**
 * Keys remembered so that a window repeated across files is bought once: about 130 MB at most,
 * whatever the corpus (every key of 10 million documents would be some 9 GB). A repeat met after
 * the set was last emptied may be bought twice.
 */
const KEYS_REMEMBERED = 1_000_000;

/** The custom_id of a memo key, and back. */
export const customIdOf = (key: string): string => key.slice(MEMO_KEY_PREFIX.length);
export const memoKeyOf = (customId: string): string => MEMO_KEY_PREFIX + customId;

export class PrefillPlan {
  readonly counts: PlanCounts = { files: 0, unchanged: 0, changed: 0, unreadable: 0, asked: 0, memoised: 0 };
  readonly #deps: PlanDeps;
  /** Keys met this run: a window repeated across files is bought once. */
  readonly #met = new Set<string>();

  constructor(deps: PlanDeps) {
    this.#deps = deps;
  }

  /** The requests the corpus at `root` needs, file by file. */
  async *requests(root: string): AsyncGenerator<PrefillRequest> {
    const { config, log } = this.#deps;
    for await (const file of walkFiles(root, log, { exclude: ownDataDirectories(config) })) {
      const mediaType = mediaTypeFor(file.relPath, config.convert.imageDocuments);
      if (mediaType === null || file.size > config.convert.maxDocumentBytes) continue;
      this.counts.files += 1;
      let converted: ConvertedText | null;
      try {
        converted = await this.#changed(file, mediaType);
      } catch (error) {
        this.#unreadable(file, error);
        continue;
      }
      if (converted === null) {
        this.counts.unchanged += 1;
        continue;
      }
      this.counts.changed += 1;
      // Cut batch by batch as the walk cuts the file, so a large file is never held whole.
      const spans = textBatches(converted.pieces, config.walk.itemBatchChunks);
      try {
        for await (const span of spans) yield* this.#missing(span.windows, span.first);
      } catch (error) {
        this.#unreadable(file, error);
      }
    }
  }

  /** The file's text as the walk converts it; null when the memo clears the file. */
  async #changed(file: FileItem, mediaType: MediaType): Promise<ConvertedText | null> {
    const { store, converter } = this.#deps;
    const { stamp } = await store.getItemStamp(fileIdentity(file.relPath));
    if (unchangedByStat(stamp, file, false)) return null;
    const admission = await admitFile(file, store, {
      fullReprocess: false,
      textual: isText(mediaType),
      refreshStamp: false,
    });
    if (admission.kind === 'unchanged') return null;
    return convertedText(converter, admission.content, mediaType);
  }

  #unreadable(file: FileItem, error: unknown): void {
    this.counts.unreadable += 1;
    this.#deps.log.info({ path: file.relPath, err: (error as Error).message }, 'prefill: file left to the walk');
  }

  async *#missing(windows: readonly string[], first: boolean): AsyncGenerator<PrefillRequest> {
    const { store, model, identity } = this.#deps;
    for (const extractor of ALL_EXTRACTORS) {
      const prompt = PROMPTS[extractor];
      for (const text of windowsAsked(extractor, windows, first)) {
        const key = extractorMemoKey(prompt, identity, text);
        if (this.#met.has(key)) continue;
        if (this.#met.size >= KEYS_REMEMBERED) this.#met.clear();
        this.#met.add(key);
        this.counts.asked += 1;
        if (fitsSchema(prompt, await store.getMemo(key))) {
          this.counts.memoised += 1;
          continue;
        }
        const params = extractorRequest(prompt, text, model);
        const inputTokens = anthropicMeter.request(params as unknown as Record<string, unknown>)?.input ?? 0;
        yield { key, customId: customIdOf(key), extractor, params, inputTokens };
      }
    }
  }
}
