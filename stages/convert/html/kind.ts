// What kind of page the main content came from, when it is not an article: a forum thread, a
// product page, documentation or a listing. Every signal is markup (og:type, schema.org item
// types and properties, class tokens of posts) or structure (repeated items, code blocks,
// link-headed items), never words of a language.

import { contains, inDocumentOrder, isBoilerplate, repeatedItems, type Measures } from './content.ts';
import { HEADING_TAGS, someElement, type Element } from './tree.ts';

export type PageKind = 'article' | 'forum' | 'product' | 'documentation' | 'listing';

const PRODUCT_ITEMTYPE = /schema\.org\/product\b/;
/**
 * Whole class, id or itemprop tokens only a product page carries (schema.org Offer
 * properties), on an element with text: an empty ad slot may be called "offers".
 */
const PRODUCT_SIGNAL = /(?:^|\s)(?:price|offers|sku|gtin\d*)(?:\s|$)/;
const POST_ITEMTYPE = /schema\.org\/discussionforumposting\b/;
/** Class tokens of the items of a thread. */
const POST_SIGNAL = /post|message|reply|comment|thread|topic|answer/;
/** Posts in a row that make a thread: a question and two replies. */
const MIN_POSTS = 3;
/** Posts have few links, and all but one (a short reply) a sentence or two of their own. */
const POST_CHARS = 80;
/** Link-headed items in a row that make a listing. */
const MIN_LISTED = 5;
/** Code blocks and headings in the main content that make documentation (sites call their docs articles too). */
const MIN_CODE_BLOCKS = 2;
const MIN_HEADINGS = 2;

export function pageKind(body: Element, main: Element[], ogType: string): PageKind {
  // With no block of prose, the whole page is what is returned, and what is weighed.
  if (main.length === 0) main = [body];
  if (
    ogType === 'product' ||
    ogType.startsWith('product.') ||
    someElement(body, (e) => PRODUCT_ITEMTYPE.test(e.itemtype) || (e.chars > 0 && PRODUCT_SIGNAL.test(e.signal)))
  )
    return 'product';
  const mainChars = main.reduce((sum, m) => sum + m.chars, 0);
  // Repeated items count when they are most of the main content, not a list inside it.
  const most = (test: (e: Element) => Element[]) => (e: Element) =>
    test(e).reduce((sum, item) => sum + item.chars, 0) * 2 >= mainChars;
  if (someElement(body, (e) => POST_ITEMTYPE.test(e.itemtype)) || main.some((m) => someElement(m, most(posts), true)))
    return 'forum';
  if (main.some((m) => someElement(m, most(listed), true))) return 'listing';
  let code = 0;
  let headings = 0;
  for (const m of main)
    someElement(
      m,
      (e) => {
        if (e.tag === 'pre' && e.chars > 0) code += 1;
        else if (HEADING_TAGS.has(e.tag)) headings += 1;
        return false;
      },
      true,
    );
  return code >= MIN_CODE_BLOCKS && headings >= MIN_HEADINGS ? 'documentation' : 'article';
}

/** Repeated items marked as posts, each with text of its own; else none. */
function posts(element: Element): Element[] {
  const items = repeatedItems(element);
  return items.length >= MIN_POSTS &&
    POST_SIGNAL.test(items[0]!.signal) &&
    items.every((item) => item.linkChars * 3 < item.chars) &&
    items.filter((item) => item.chars >= POST_CHARS).length >= MIN_POSTS - 1
    ? items
    : [];
}

/** Repeated items that each lead to another page (mostly link text); else none. */
function listed(element: Element): Element[] {
  const items = repeatedItems(element);
  return items.length >= MIN_LISTED && items.every((item) => item.linkChars * 2 >= item.chars) ? items : [];
}

/** How far above a product's description its other blocks (features, details) are looked for. */
const PRODUCT_REGION_LEVELS = 5;
/** The ancestor's prose margin must beat the description's by this factor. */
const PRODUCT_REGION_GAIN = 1.1;

/**
 * A product's description, features and details are blocks side by side, each too short to
 * outscore the description alone: a single main block grows to its ancestor (within five
 * levels, below the body) whose prose margin is widest, when that beats its own by a tenth.
 */
export function withProductRegion(main: readonly Element[], body: Element, measures: Measures): readonly Element[] {
  if (main.length !== 1) return main;
  let region = main[0]!;
  let level = 0;
  for (let e = region.parent; e !== null && e !== body && level < PRODUCT_REGION_LEVELS; e = e.parent, level++)
    if (measures.margin(e) > measures.margin(region) * PRODUCT_REGION_GAIN) region = e;
  return [region];
}

/** How far above the main content a product's specification tables are looked for. */
const PRODUCT_LEVELS = 2;

/**
 * A product's specification tables hold no prose, so the main content (its description)
 * leaves them out: the tables near it (under its parent or grandparent), not inside it and
 * not pruned, are added after it.
 */
export function withSpecTables(main: readonly Element[], pruned: ReadonlySet<Element>): readonly Element[] {
  let scope = main[0]?.parent ?? null;
  for (let level = 1; level < PRODUCT_LEVELS && scope?.parent != null; level++) scope = scope.parent;
  if (scope === null) return main;
  const inMain = (e: Element) => main.some((m) => contains(m, e));
  const tables: Element[] = [];
  const collect = (element: Element) => {
    for (const child of element.children) {
      if (typeof child === 'string' || pruned.has(child)) continue;
      if (child.tag === 'table' && child.chars > 0 && !inMain(child)) tables.push(child);
      else collect(child);
    }
  };
  collect(scope);
  return tables.length === 0 ? main : [...main, ...tables];
}

/** How far above the main content a thread's replies are looked for. */
const REPLY_LEVELS = 3;

/**
 * A thread's replies are often marked as comments, which on an article are furniture: on a
 * forum page the pruned subtrees near the main content (under one of its three nearest
 * ancestors) whose class says post, reply or comment and which hold a post's worth of text
 * are its posts, added in document order; the furniture inside them stays out. The pruned
 * subtrees given are left as they are: the ones returned are a new set.
 */
export function withReplies(
  main: readonly Element[],
  given: ReadonlySet<Element>,
  measures: Measures,
): { main: readonly Element[]; pruned: ReadonlySet<Element> } {
  let scope: Element | null = main[0]?.parent ?? null;
  for (let level = 1; level < REPLY_LEVELS && scope?.parent != null; level++) {
    if (hasReplies(scope, given)) break;
    scope = scope.parent;
  }
  if (scope === null || !hasReplies(scope, given) || !main.every((m) => contains(scope, m)))
    return { main, pruned: given };
  const pruned = new Set(given);
  const wanted = new Set(main);
  const visit = (element: Element) => {
    for (const child of element.children) {
      if (typeof child === 'string') continue;
      if (isReplies(child, pruned)) {
        pruned.delete(child);
        pruneInside(child, pruned, measures);
        wanted.add(child);
      } else if (!pruned.has(child)) visit(child);
    }
  };
  visit(scope);
  return { main: inDocumentOrder(scope, wanted), pruned };
}

function isReplies(element: Element, pruned: ReadonlySet<Element>): boolean {
  return (
    pruned.has(element) &&
    POST_SIGNAL.test(element.signal) &&
    element.chars >= POST_CHARS &&
    element.linkChars * 3 < element.chars
  );
}

function hasReplies(scope: Element, pruned: ReadonlySet<Element>): boolean {
  return someElement(scope, (e) => isReplies(e, pruned));
}

function pruneInside(element: Element, pruned: Set<Element>, measures: Measures): void {
  for (const child of element.children) {
    if (typeof child === 'string') continue;
    // A reply nested in a reply is a post too; its header, by its tag, is furniture.
    if (isBoilerplate(child, measures) && !(POST_SIGNAL.test(child.signal) && measures.prose(child) >= POST_CHARS))
      pruned.add(child);
    else pruneInside(child, pruned, measures);
  }
}
