// Stage 3, LLM extraction (docs/behaviour/stages.md#stage-3-llm-extraction): the four memoised
// extractors over one document.
//
// A long document is read in extraction windows (stages/chunk.ts with window sizes), each
// window a separate memoised call, so an edit re-extracts only the windows it touched. A large
// document is read a batch of windows at a time (extractWindows), its names merged as it goes.
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
import { chunksOf, type Chunk } from '../chunk.ts';

/** ~3k tokens of input per call: room for the answer, and small enough to re-extract cheaply. */
export const WINDOW_TARGET_CHARS = 10_000;
export const WINDOW_MAX_CHARS = 12_000;
export const WINDOW_CHUNKING = { targetChars: WINDOW_TARGET_CHARS, maxChars: WINDOW_MAX_CHARS };

export interface DocumentExtraction {
  classification: (Classification & { in_taxonomy: boolean }) | null;
  qa: { idx: number; question: string; answer: string | null }[];
  entities: Entities['entities'];
  relationships: Relationships['relationships'];
}

export type ExtractDeps = ExtractorContext;

/** The answered predicate (docs/behaviour/stages.md#blank-form-gate), as schema/0002 spells it in SQL. */
export function isAnswered(answer: string | null): answer is string {
  return answer !== null && /\S/.test(answer);
}

/** What the extractors need from an open engine, for one item. */
export function extractDeps(models: Models, store: ExtractorContext['store']): ExtractDeps {
  return { client: models.llm, model: models.model, identity: models.identity, store, queue: models.queue };
}

/** A document's extraction windows one at a time, each with where it starts in the text. */
export function windowsOf(text: string): Generator<Chunk, void, undefined> {
  return chunksOf(text, WINDOW_CHUNKING);
}

export function extractionWindows(text: string): string[] {
  return Array.from(windowsOf(text), (w) => w.text);
}

export type ExtractorName = 'classification' | 'qa' | 'entities' | 'relationships';
export const ALL_EXTRACTORS: readonly ExtractorName[] = Object.freeze([
  'classification',
  'qa',
  'entities',
  'relationships',
]);

/** What the extractors found in consecutive windows of a document, in document order, names not yet merged. */
export interface WindowsExtraction {
  /** Read from the document's first window: null unless these windows begin the document. */
  classification: DocumentExtraction['classification'];
  qa: { question: string; answer: string | null }[];
  entities: Entities['entities'];
  relationships: Relationships['relationships'];
}

/**
 * Runs the named extractors over some consecutive windows of a document (`first`: they begin
 * it); a large document is read this way a batch of windows at a time (engine/item/file.ts).
 */
export async function extractWindows(
  windows: readonly string[],
  deps: ExtractDeps,
  { first, extractors = ALL_EXTRACTORS }: { first: boolean; extractors?: readonly ExtractorName[] },
): Promise<WindowsExtraction> {
  const call = <T>(name: ExtractorName, window: string) => runExtractor<T>(PROMPTS[name], window, deps);
  const ask = <T>(name: ExtractorName): Promise<T[]> =>
    extractors.includes(name)
      ? Promise.all(windowsAsked(name, windows, first).map((w) => call<T>(name, w)))
      : Promise.resolve([]);
  const [classifications, qaPerWindow, entitiesPerWindow, relationshipsPerWindow] = await Promise.all([
    ask<Classification>('classification'),
    ask<QaPairs>('qa'),
    ask<Entities>('entities'),
    ask<Relationships>('relationships'),
  ]);
  const classification = classifications[0] ?? null;
  const inTaxonomy = classification !== null && (TAXONOMY as readonly string[]).includes(classification.label);
  if (classification !== null && !inTaxonomy) countEvent('taxonomy_miss');
  return {
    classification: classification === null ? null : { ...classification, in_taxonomy: inTaxonomy },
    qa: qaPerWindow.flatMap((w) => w.pairs),
    entities: entitiesPerWindow.flatMap((w) => w.entities),
    relationships: relationshipsPerWindow.flatMap((w) => w.relationships),
  };
}

/**
 * The windows an extractor is asked about: classification the document's first (where a
 * document says what it is), the others every one. The prefill (engine/prefill/plan.ts) buys
 * exactly these answers ahead of a walk.
 */
export function windowsAsked(name: ExtractorName, windows: readonly string[], first: boolean): readonly string[] {
  if (name !== 'classification') return windows;
  return first && windows.length > 0 ? windows.slice(0, 1) : [];
}

/** Runs the named extractors (all four unless told) over a whole document; the others contribute nothing. */
export async function extractDocument(
  text: string,
  deps: ExtractDeps,
  extractors: readonly ExtractorName[] = ALL_EXTRACTORS,
): Promise<DocumentExtraction> {
  const found = await extractWindows(extractionWindows(text), deps, { first: true, extractors });
  return {
    classification: found.classification,
    qa: found.qa.map((pair, idx) => ({ idx, ...pair })),
    ...mergeMentions(found.entities, found.relationships),
  };
}

/**
 * One entity per (canonical name, type) and one relationship per (source, predicate, target),
 * the best of each kept. A large file merges a batch of windows at a time, and its rows merge
 * across batches by the same rule in SQL (lib/db/tables.ts MENTION_MERGE).
 */
export function mergeMentions(entities: Entities['entities'], relationships: Relationships['relationships']) {
  return {
    entities: keepBest(entities, (e) => `${e.canonical_name}\u0000${e.type}`, outranks),
    relationships: keepBest(
      relationships,
      (r) => `${r.source}\u0000${r.predicate}\u0000${r.target}`,
      (a, b) => a.confidence > b.confidence,
    ),
  };
}

/**
 * Of two mentions on one key, whether `a` is the one kept: the higher confidence, then the
 * smaller surface form, so the survivor never depends on the order the two came in (a re-walk
 * after a crash meets them in another order). lib/db/tables.ts MENTION_MERGE is the same rule in SQL.
 */
export function outranks(
  a: { confidence: number | null; surface_form: string },
  b: { confidence: number | null; surface_form: string },
): boolean {
  const [ca, cb] = [a.confidence ?? 0, b.confidence ?? 0];
  return ca !== cb ? ca > cb : a.surface_form < b.surface_form;
}

/** One item per key: of several, the one no other outranks. */
function keepBest<T>(items: readonly T[], keyOf: (item: T) => string, isBetter: (a: T, b: T) => boolean): T[] {
  const merged = new Map<string, T>();
  for (const item of items) {
    const key = keyOf(item);
    const kept = merged.get(key);
    if (kept === undefined || isBetter(item, kept)) merged.set(key, item);
  }
  return [...merged.values()];
}
