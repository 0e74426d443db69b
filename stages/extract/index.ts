// Stage 3, LLM extraction (SPEC.md 1): the four memoised extractors over one document.
//
// A long document is read in extraction windows (stages/chunk.ts with window sizes), each
// window a separate memoised call, so an edit re-extracts only the windows it touched.
// Classification reads the first window (where a document says what it is); Q&A pairs are
// enumerated across windows in document order, so a pair's idx (and key) is stable; entities
// and relationships are merged across windows. Which canonical each name chains under is
// stage 5's business (stages/resolve/known.ts), applied to what this returns.

import type { Models } from '../../lib/models.ts';
import { countEvent } from '../../lib/run-context.ts';
import { runExtractor, type ExtractorContext } from '../../lib/llm/run-extractor.ts';
import { PROMPTS } from '../../lib/llm/prompts.ts';
import {
  TAXONOMY,
  type Classification,
  type Entities,
  type QaPairs,
  type Relationships,
} from '../../lib/llm/schemas.ts';
import { chunkText } from '../chunk.ts';

/** ~3k tokens of input per call: room for the answer, and small enough to re-extract cheaply. */
export const WINDOW_TARGET_CHARS = 10_000;
export const WINDOW_MAX_CHARS = 12_000;

export interface DocumentExtraction {
  classification: (Classification & { in_taxonomy: boolean }) | null;
  qa: { idx: number; question: string; answer: string | null }[];
  entities: Entities['entities'];
  relationships: Relationships['relationships'];
}

export type ExtractDeps = ExtractorContext;

/** The answered predicate of SPEC.md 1 rule 7, as schema/0002 spells it in SQL. */
export function isAnswered(answer: string | null): answer is string {
  return answer !== null && /\S/.test(answer);
}

/** What the extractors need from an open engine, for one item. */
export function extractDeps(models: Models, store: ExtractorContext['store']): ExtractDeps {
  return { client: models.llm, model: models.model, identity: models.identity, store, queue: models.queue };
}

export function extractionWindows(text: string): string[] {
  return chunkText(text, { targetChars: WINDOW_TARGET_CHARS, maxChars: WINDOW_MAX_CHARS }).map((c) => c.text);
}

export type ExtractorName = 'classification' | 'qa' | 'entities' | 'relationships';
export const ALL_EXTRACTORS: readonly ExtractorName[] = Object.freeze([
  'classification',
  'qa',
  'entities',
  'relationships',
]);

/** Runs the named extractors (all four unless told); the others contribute nothing. */
export async function extractDocument(
  text: string,
  deps: ExtractDeps,
  extractors: readonly ExtractorName[] = ALL_EXTRACTORS,
): Promise<DocumentExtraction> {
  const windows = extractionWindows(text);
  if (windows.length === 0) return { classification: null, qa: [], entities: [], relationships: [] };
  const call = <T>(name: ExtractorName, window: string) => runExtractor<T>(PROMPTS[name], window, deps);
  const perWindow = <T>(name: ExtractorName): Promise<T[]> =>
    extractors.includes(name) ? Promise.all(windows.map((w) => call<T>(name, w))) : Promise.resolve([]);
  const [classification, qaPerWindow, entitiesPerWindow, relationshipsPerWindow] = await Promise.all([
    extractors.includes('classification') ? call<Classification>('classification', windows[0]!) : null,
    perWindow<QaPairs>('qa'),
    perWindow<Entities>('entities'),
    perWindow<Relationships>('relationships'),
  ]);
  const inTaxonomy = classification !== null && (TAXONOMY as readonly string[]).includes(classification.label);
  if (classification !== null && !inTaxonomy) countEvent('taxonomy_miss');
  return {
    classification: classification === null ? null : { ...classification, in_taxonomy: inTaxonomy },
    qa: qaPerWindow.flatMap((w) => w.pairs).map((pair, idx) => ({ idx, ...pair })),
    ...mergeMentions(
      entitiesPerWindow.flatMap((w) => w.entities),
      relationshipsPerWindow.flatMap((w) => w.relationships),
    ),
  };
}

/** One entity per (canonical name, type) and one relationship per (source, predicate, target). */
export function mergeMentions(entities: Entities['entities'], relationships: Relationships['relationships']) {
  return {
    entities: mergeBy(entities, (e) => `${e.canonical_name}\u0000${e.type}`, outranks),
    relationships: mergeBy(
      relationships,
      (r) => `${r.source}\u0000${r.predicate}\u0000${r.target}`,
      (a, b) => a.confidence > b.confidence,
    ),
  };
}

/**
 * Of two mentions on one key, whether `a` is the one kept: the higher confidence, then the
 * smaller surface form, so the survivor never depends on the order the two came in (a re-walk
 * after a crash meets them in another order). The write-back's SQL applies the same rule.
 */
export function outranks(
  a: { confidence: number | null; surface_form: string },
  b: { confidence: number | null; surface_form: string },
): boolean {
  const [ca, cb] = [a.confidence ?? 0, b.confidence ?? 0];
  return ca !== cb ? ca > cb : a.surface_form < b.surface_form;
}

/** One item per key: the one no other item of its key outranks. */
function mergeBy<T>(items: T[], keyOf: (item: T) => string, isBetter: (a: T, b: T) => boolean): T[] {
  const merged = new Map<string, T>();
  for (const item of items) {
    const key = keyOf(item);
    const kept = merged.get(key);
    if (kept === undefined || isBetter(item, kept)) merged.set(key, item);
  }
  return [...merged.values()];
}
