// The cleaner's second thoughts on the main content that selectMain chose (content.ts): named
// rules, applied in the order of RULES. First two overrides by the kind of page, then the
// main content grows while its text is thin. Each rule takes a selection and returns a new one,
// or the same one when it does not apply; none changes the selection it is given.

import { contains, inDocumentOrder, isPricedList, isTeaserList, largestItemList, proseAncestor } from './content.ts';
import type { Measures } from './content.ts';
import { withProductRegion, withReplies, withSpecTables } from './kind.ts';
import type { Selection, SelectionTexts } from './selection.ts';
import type { Element } from './tree.ts';

/** A main text with fewer visible characters than this (Latin letters, or a third as many Han, kana or Hangul) is too short to be an article. */
export const THIN_CHARS = 250;
/** A thin main text is joined by the page's largest list of items when the list holds this many times its text. */
const LISTING_GAIN = 2;
/** A thin main text gives way to the whole page less its furniture when that shows this many times its text. */
const WHOLE_PAGE_GAIN = 3;

/** What every rule may read of the page. */
export interface PageContext {
  body: Element;
  /** What the scoring pass measured of each element. */
  measures: Measures;
  /** The text of any selection, rendered once. */
  texts: SelectionTexts;
}

export type Rule = (selection: Selection, page: PageContext) => Selection;

/**
 * A product's description, features and details are blocks side by side: the main block grows
 * to their region, and the specification tables near it join it.
 */
export const productParts: Rule = (selection, page) =>
  selection.kind !== 'product'
    ? selection
    : {
        ...selection,
        main: withSpecTables(withProductRegion(selection.main, page.body, page.measures), selection.pruned),
      };

/** A thread's replies, pruned as comments (furniture on an article), are its posts. */
export const forumReplies: Rule = (selection, page) => {
  if (selection.kind !== 'forum') return selection;
  const { main, pruned } = withReplies(selection.main, selection.pruned, page.measures);
  return { ...selection, main, pruned };
};

/** Link lists are most of the main content (a page of references, a wiki's index page): they are its text. */
export const linkListsWhenMost: Rule = (selection, page) => {
  const { shown, skippedLinkChars } = page.texts.of(selection);
  return skippedLinkChars > shown ? { ...selection, keepLinkLists: true } : selection;
};

/**
 * A thin block inside a wider run of prose (a product's description tab beside its
 * specifications): the nearest ancestor whose prose outweighs its other text by an article's
 * worth is the main content.
 */
export const widerProse: Rule = (selection, page) => {
  if (page.texts.of(selection).shown >= THIN_CHARS || selection.main.length !== 1) return selection;
  const wider = proseAncestor(selection, page.body, THIN_CHARS, page.measures);
  return wider === null ? selection : { ...selection, main: [wider] };
};

/**
 * A page of items keeps its list: little or no prose (a catalogue, events, records) is joined
 * by the page's largest list of items when that holds twice as much, and a shop's text (a
 * category's introduction) by its grid of priced items when that holds as much. Such a grid
 * lies outside the main text, so a page with less than that outside it (an article that is
 * most of its page) is not walked for one. The page is then a listing, and nothing in its list
 * is skipped as a link list: the items are what it holds.
 */
export const itemList: Rule = (selection, page) => {
  const { shown } = page.texts.of(selection);
  const mainChars = selection.main.reduce((sum, m) => sum + m.chars, 0);
  const list =
    shown < THIN_CHARS || (selection.kind !== 'listing' && page.body.chars - mainChars >= shown)
      ? largestItemList(page.body, selection.pruned)
      : null;
  if (list === null) return selection;
  const joins =
    shown < THIN_CHARS
      ? list.chars >= LISTING_GAIN * shown
      : isPricedList(list) &&
        list.chars >= shown &&
        !selection.main.some((m) => contains(m, list) || contains(list, m));
  return joins ? { ...selection, main: withList(page.body, selection.main, list), kind: 'listing' } : selection;
};

/**
 * Still thin after every growth, and not a short article chosen under its headline: a page
 * with no article (a hub of categories, a table of rankings). The page without its furniture
 * is the content when it shows three times as much; teasers of other stories (a linked
 * headline and a summary of prose each) are not part of it, so a short news item stays alone.
 */
export const wholePage: Rule = (selection, page) => {
  const { blocks, shown } = page.texts.of(selection);
  if (blocks.length === 0 || shown >= THIN_CHARS || selection.overruled !== undefined) return selection;
  const whole: Selection = {
    ...selection,
    main: [page.body],
    pruned: withOtherStories(page.body, selection, page.measures),
    whole: true,
  };
  return page.texts.of(whole).shown >= WHOLE_PAGE_GAIN * shown ? whole : selection;
};

/** The order the rules apply in: overrides by kind, the link lists' verdict, then growth. */
export const RULES: readonly Rule[] = [productParts, forumReplies, linkListsWhenMost, widerProse, itemList, wholePage];

export function applyRules(selection: Selection, page: PageContext): Selection {
  return RULES.reduce((current, rule) => rule(current, page), selection);
}

/**
 * The main elements with the list added, in document order: a main element that holds the
 * list already keeps it (its text around the list stays), unless it is the whole body; one
 * inside the list gives way to it.
 */
function withList(body: Element, main: readonly Element[], list: Element): readonly Element[] {
  if (main.some((m) => m !== body && contains(m, list))) return main;
  return inDocumentOrder(body, new Set([...main.filter((m) => !contains(list, m) && !contains(m, list)), list]));
}

/**
 * The pruned subtrees and the teaser lists of other stories outside the main elements (the
 * outermost ones: rendering never looks inside a subtree it leaves out).
 */
function withOtherStories(body: Element, selection: Selection, measures: Measures): ReadonlySet<Element> {
  const pruned = new Set(selection.pruned);
  const visit = (element: Element) => {
    for (const child of element.children) {
      if (typeof child === 'string' || pruned.has(child)) continue;
      if (!selection.main.includes(child) && measures.prose(child) > 0 && isTeaserList(child)) pruned.add(child);
      else visit(child);
    }
  };
  visit(body);
  return pruned;
}
