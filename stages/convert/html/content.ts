// Finding the main content block. Every signal is structural or density-based, so it works in
// any language and script: how much running text a block has, how much of it sits inside
// links, and what the markup says a block is (nav, aside, footer, roles, boilerplate class and
// id tokens). Class and id tokens are markup vocabulary, not prose, so they are the same on a
// Korean page as on an English one.

import { Element, HEADING_TAGS, someElement, soleHeading } from './tree.ts';

/** Running text shorter than this (visible characters) is a label, a link or a line, not prose. */
const MIN_PROSE_CHARS = 25;
/** Running text with a larger share of its characters inside links is navigation. */
const MAX_PROSE_LINK_SHARE = 0.3;
/** Prose (characters) and link share past which a layout class no longer marks boilerplate. */
const LAYOUT_PROSE_CHARS = 80;
const LAYOUT_PROSE_LINK_SHARE = 0.2;
/** A boilerplate-signalled element (a form around the whole page) is kept when it holds more than this share of the page's prose. */
const KEEP_IF_PROSE_SHARE = 0.5;

const BOILERPLATE_TAGS = new Set([
  'nav',
  'aside',
  'footer',
  'header',
  'menu',
  'dialog',
  'form',
  'figure',
  'figcaption',
]);
const BOILERPLATE_ROLES = new Set([
  'navigation',
  'banner',
  'contentinfo',
  'complementary',
  'search',
  'menu',
  'menubar',
  'dialog',
  'alertdialog',
  'alert',
  'toolbar',
]);
/**
 * Class and id fragments of site furniture that no article body carries: sharing, comments,
 * promotion, consent, recommendation widgets, legal notes.
 */
const FURNITURE_SIGNAL = new RegExp(
  [
    'comment',
    'disqus',
    'cookie',
    'consent',
    'gdpr',
    'newsletter',
    'subscri',
    'social',
    'share',
    'sharing',
    'related',
    'recommend',
    'promo',
    'sponsor',
    'advert',
    'popup',
    'modal',
    'signup',
    'paywall',
    'outbrain',
    'taboola',
    'breadcrumb',
    'skip-link',
    'print-only',
    'trending',
    'most-read',
    'mostread',
    'most-popular',
    'caption',
    'credit',
    'disclosure',
    'disclaimer',
    'legal',
    'about-?(?:the-?)?author',
    'author-?(?:bio|box|info|card|profile|details|about)',
  ].join('|'),
);
/** Class fragments of text shown to screen readers only. */
const SCREEN_READER_SIGNAL = /sr-only|visually-hidden|screen-reader/;
/**
 * Fragments of layout furniture. Page wrappers often carry them as modifiers ("has-sidebar",
 * "main-header"), so a content fragment in the same element cancels them.
 */
const LAYOUT_SIGNAL =
  /sidebar|footer|header|menu|navbar|navigation|banner|masthead|widget|pagination|pager|toolbar|byline|dateline|timestamp|hidden/;
/** A responsive display class that shows, from some screen width on, what `hidden` hides on phones. */
const SHOWN_FROM_A_WIDTH =
  /(?:^|\s)(?:sm|md|lg|xl|2xl):(?:block|flex|grid|inline|inline-block|inline-flex|table)(?=\s|$)/;
const HIDDEN_WORD = /(?:^|\s)hidden(?=\s|$)/g;
/** Class words that hide part of an element, not the element: clipped overflow, a field's hidden label. */
const PARTLY_HIDDEN = /(?:overflow(?:-[xy])?|label)-hidden/g;
const CONTENT_SIGNAL = /article|body|content|main|column|post|entry|story|text/;
/** Short tokens that must be a whole class token (as a substring they match too much). */
const LAYOUT_TOKENS = new Set([
  'nav',
  'ad',
  'ads',
  'adv',
  'tags',
  'tag',
  'meta',
  'author',
  'topbar',
  'rail',
  'carousel',
  'slider',
]);

/**
 * A footer or a sidebar: left out even when it holds most of the page's prose (pages of short
 * blocks above pages of legal notes, a table of results beside widgets of text), since no site
 * wraps its content in one.
 */
function isFooterOrSidebar(element: Element): boolean {
  return (
    element.tag === 'footer' ||
    element.tag === 'aside' ||
    element.role === 'contentinfo' ||
    element.role === 'complementary'
  );
}

export function isBoilerplate(element: Element, measures: Measures): boolean {
  // A figure is an image and its caption, unless it holds a table (WordPress wraps every table
  // in one).
  if (element.tag === 'figure' && someElement(element, (e) => e.tag === 'table')) return false;
  // A section's header that holds only its heading is that heading; the page's headline is not
  // the article's text.
  if (element.tag === 'header' && element.role === '') {
    const heading = soleHeading(element);
    if (heading !== null && heading.tag !== 'h1') return false;
  }
  if (BOILERPLATE_TAGS.has(element.tag) || BOILERPLATE_ROLES.has(element.role)) return true;
  const signal = element.signal.length <= 2 ? '' : element.signal;
  if (SCREEN_READER_SIGNAL.test(signal)) return true;
  // A link inside a sentence is words of the sentence, whatever its class ("external-popup").
  if (element.tag === 'a' && !element.block && inSentence(element)) return false;
  if (signal !== '' && FURNITURE_SIGNAL.test(signal)) return true;
  // Layout words and a tab list's role are weak evidence (page builders put "widget" on every
  // block; an accordion of questions and answers is a tab list): an element they mark that
  // holds a run of prose with few links, or only a heading, or all of a list item's text (a
  // review's pros wrapped in a "meta" style), is content all the same.
  const weak = element.role === 'tablist' || (signal !== '' && !CONTENT_SIGNAL.test(signal) && layoutSignal(signal));
  return (
    weak &&
    !(measures.prose(element) >= LAYOUT_PROSE_CHARS && element.linkChars <= element.chars * LAYOUT_PROSE_LINK_SHARE) &&
    !(element.headingChars === element.chars && element.linkChars < element.chars) &&
    !(element.parent?.tag === 'li' && element.parent.chars === element.chars)
  );
}

/** An inline element with a run of its parent's own text around it. */
function inSentence(element: Element): boolean {
  const parent = element.parent;
  return parent !== null && parent.inlineChars - element.chars >= MIN_PROSE_CHARS;
}

function layoutSignal(classes: string): boolean {
  // Utility CSS clips a card's long name with overflow-hidden, and Drupal marks a field whose
  // label is hidden with field--label-hidden: both are shown. Tailwind's `hidden sm:block` is
  // hidden on phones only, and read as a desktop shows it.
  let signal = classes.replace(PARTLY_HIDDEN, '');
  if (SHOWN_FROM_A_WIDTH.test(signal)) signal = signal.replace(HIDDEN_WORD, ' ');
  if (LAYOUT_SIGNAL.test(signal)) return true;
  for (const token of signal.split(/[^a-z0-9]+/)) if (LAYOUT_TOKENS.has(token)) return true;
  return false;
}

/** Prose characters of an element's own running text, or 0 when that text is not prose. */
export function proseChars(element: Element): number {
  const text = element.inlineChars;
  if (text - element.inlineLinkChars < MIN_PROSE_CHARS) return 0;
  if (element.inlineLinkChars > text * MAX_PROSE_LINK_SHARE) return 0;
  return text;
}

/** What the scoring pass measured of each element, kept beside the tree rather than in it. */
export interface Measures {
  /** Prose characters in the element's subtree. */
  prose(element: Element): number;
  /** Its prose less its other visible text, pruned parts aside (proseRegion); 0 where not measured. */
  margin(element: Element): number;
}

/** The scoring pass's side table: it alone writes it, every later step reads it as Measures. */
class MeasureTable implements Measures {
  readonly #prose = new Map<Element, number>();
  readonly #margin = new Map<Element, number>();

  prose(element: Element): number {
    return this.#prose.get(element) ?? 0;
  }

  margin(element: Element): number {
    return this.#margin.get(element) ?? 0;
  }

  setProse(element: Element, prose: number): void {
    this.#prose.set(element, prose);
  }

  setMargin(element: Element, margin: number): void {
    this.#margin.set(element, margin);
  }
}

export interface MainChoice {
  /** The elements whose text is the main content, in document order; empty when none holds prose. */
  main: Element[];
  /** Boilerplate subtrees to leave out when rendering. */
  pruned: Set<Element>;
  /** The best-scoring block when the block under the headline was chosen over it. */
  overruled?: Element;
  measures: Measures;
}

/** Code blocks, read whole: nothing inside them is furniture. */
const CODE_TAGS = new Set(['pre', 'code']);

/** Tags whose running text is a paragraph of their parent. */
const PARAGRAPH_TAGS = new Set([
  'p',
  'pre',
  'blockquote',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'li',
  'dd',
  'dt',
  'td',
  'th',
]);
/** Share of prose credited to a container and its ancestors, by distance. */
const ANCESTOR_SHARE = [1, 0.5, 1 / 6, 1 / 9];
/** A sibling of the best block joins it when it scores at least this share of the best. */
const SIBLING_SHARE = 0.2;
/** Blocks scoring this share of the best are rivals; enough rivals in one ancestor make it the main block. */
const RIVAL_SHARE = 0.75;
const MIN_RIVALS = 3;
/** Only the strongest rivals are weighed (Readability's five), which bounds the work on any page. */
const MAX_RIVALS = 5;
/** A sibling whose own running text has this much prose joins the best block whatever its score. */
const SIBLING_PROSE_CHARS = 80;

/** The block under the headline is the article, over a best block elsewhere with up to 1/0.3 times its prose. */
const HEADLINE_PROSE_SHARE = 0.3;
/** In the prose region, each character of other text costs this many characters of prose. */
const REGION_NOISE_WEIGHT = 1;
/** The prose region replaces the best block when its margin is at least this multiple of the block's. */
const REGION_GAIN = 1.3;
/** Sections of prose in one container that make a page of sections rather than an article beside a notice. */
const MIN_SECTIONS = 3;
/** A best block with less than this share of its main landmark's prose is one section of the landmark's content. */
const LANDMARK_SECTION_SHARE = 0.7;

/**
 * Chooses the main content the way Readability does, on prose measured in characters: every
 * paragraph of prose credits its container fully and the container's ancestors less and less,
 * so the container that holds a dense run of paragraphs stands out even when a page has as
 * much prose again spread over teasers and comments. A container's score shrinks with its
 * link share. Siblings of the winner that also score well (an article split across several
 * blocks) join it. Boilerplate subtrees are left out first, unless one of them holds most of
 * the page's prose (a site that wraps the whole page in a <form>). Three checks can overrule
 * the winner: the block under the page's headline, when the winner lies elsewhere and is not
 * much longer (a short article beside a long notice), unless the page's main landmark holds
 * both (then the landmark is the content); the main landmark, when the winner is only one of
 * its sections of prose; and the prose region around the winner, when it clearly outweighs it
 * (an article in many wrappers, a thread, a product page).
 */
export function selectMain(body: Element, title: string | null): MainChoice {
  const measures = new MeasureTable();
  const { pruned, scored, final } = scoreContainers(body, measures);
  const found = bestBlock(body, scored, final);
  if (found === null) return { main: [], pruned, measures };
  const { best, bestScore } = found;
  const overruled = overrule(body, title, best, pruned, measures);
  if (overruled !== null) return { ...overruled, pruned, measures };
  const parent = best.parent;
  if (parent === null) return { main: [best], pruned, measures };
  const threshold = Math.max(10, bestScore * SIBLING_SHARE);
  const main: Element[] = [];
  for (const sibling of parent.children) {
    if (typeof sibling === 'string' || pruned.has(sibling)) continue;
    if (sibling === best) main.push(sibling);
    else if ((final(sibling) >= threshold || proseChars(sibling) >= SIBLING_PROSE_CHARS) && !isTeaserList(sibling))
      main.push(sibling);
  }
  return { main, pruned, measures };
}

/** Scores every container by the prose under it (selectMain), boilerplate subtrees pruned first. */
function scoreContainers(
  body: Element,
  measures: MeasureTable,
): { pruned: Set<Element>; scored: Element[]; final: (element: Element) => number } {
  const totalProse = sumProse(body, measures);
  const pruned = new Set<Element>();
  /** Each container's content score; an element with none scores 0. */
  const scores = new Map<Element, number>();
  const scored: Element[] = [];

  const visit = (element: Element) => {
    if (
      element !== body &&
      isBoilerplate(element, measures) &&
      (isFooterOrSidebar(element) || measures.prose(element) <= totalProse * KEEP_IF_PROSE_SHARE)
    ) {
      pruned.add(element);
      return;
    }
    const prose = element.block ? proseChars(element) : 0;
    if (prose > 0) {
      let container: Element | null = PARAGRAPH_TAGS.has(element.tag) ? element.parent : element;
      for (let level = 0; level < ANCESTOR_SHARE.length && container !== null; level++) {
        const score = scores.get(container);
        if (score === undefined) scored.push(container);
        scores.set(container, (score ?? 0) + prose * ANCESTOR_SHARE[level]!);
        container = container.parent;
      }
    }
    // Code is code: a highlighter's "token comment" or "token tag" spans are not furniture.
    if (CODE_TAGS.has(element.tag)) return;
    for (const child of element.children) if (typeof child !== 'string') visit(child);
  };
  visit(body);

  const final = (element: Element) =>
    element.chars === 0 ? 0 : (scores.get(element) ?? 0) * (1 - element.linkChars / element.chars);
  return { pruned, scored, final };
}

/** The best-scoring block, widened to the ancestor that really holds it; null when nothing scored. */
function bestBlock(
  body: Element,
  scored: readonly Element[],
  final: (element: Element) => number,
): { best: Element; bestScore: number } | null {
  let best: Element | null = null;
  let bestScore = 0;
  for (const element of scored) {
    const score = final(element);
    if (score > bestScore) {
      best = element;
      bestScore = score;
    }
  }
  if (best === null) return null;

  // Several near-best blocks inside one ancestor are one article in chunks: take the ancestor.
  const rivals = strongest(
    scored.filter((e) => e !== best && final(e) >= bestScore * RIVAL_SHARE),
    final,
    MAX_RIVALS,
  );
  if (rivals.length >= MIN_RIVALS) {
    for (let ancestor = best.parent; ancestor !== null && ancestor !== body; ancestor = ancestor.parent) {
      if (rivals.filter((rival) => contains(ancestor, rival)).length >= MIN_RIVALS) {
        best = ancestor;
        bestScore = Math.max(bestScore, final(ancestor));
        break;
      }
    }
  }
  // A block alone in its parent is as good as the parent, whose siblings are the ones to weigh.
  // Its siblings then compete with it at the same level, so it is scored at that level too.
  if (best.parent !== null && best.parent !== body && onlyChild(best)) {
    while (best.parent !== null && best.parent !== body && onlyChild(best)) best = best.parent;
    bestScore = final(best);
  }

  // An ancestor that scores higher still is the real container (the article's paragraphs were
  // split over several sub-blocks); stop once ancestors fall well below.
  let last = bestScore;
  for (let parent = best.parent; parent !== null && parent !== body; parent = parent.parent) {
    const score = final(parent);
    if (score < last / 3) break;
    if (score > bestScore) {
      best = parent;
      bestScore = score;
    }
    last = score;
  }
  return { best, bestScore };
}

/**
 * The three checks that can overrule the best block (selectMain): the headline's block, the
 * main landmark, the prose region around it. Null when none does.
 */
function overrule(
  body: Element,
  title: string | null,
  best: Element,
  pruned: Set<Element>,
  measures: MeasureTable,
): Pick<MainChoice, 'main' | 'overruled'> | null {
  // The page's headline marks where its article is: a short article beside a longer block of
  // other text (a service notice, a list of stories) is found by the headline it sits under.
  // (The prose region is measured first: every element's margin is read again by proseAncestor.)
  const region = proseRegion(body, best, pruned, measures);
  const anchored = headlineBlock(body, title, pruned, measures);
  if (
    anchored !== null &&
    !contains(anchored, best) &&
    !contains(best, anchored) &&
    measures.prose(anchored) >= measures.prose(best) * HEADLINE_PROSE_SHARE
  ) {
    // Both in the page's main landmark: the page itself says that is where its content is.
    const landmark = mainLandmarkAbove(anchored, body);
    if (landmark !== null && contains(landmark, best)) return { main: [landmark] };
    // Two of three or more sections of prose in one container: the headline opens a page of
    // sections (a page builder's blocks), whose container is the content; an article beside a
    // notice is two.
    const container = commonAncestor(anchored, best);
    if (container !== body && sectionsOfProse(container, pruned) >= MIN_SECTIONS) return { main: [container] };
    return { main: [anchored], overruled: best };
  }

  // The page's main landmark around a best block that is one of its sections (a service page's
  // blocks, a category's intro above its grid): the page itself says its content is all there.
  const landmark = mainLandmarkAbove(best, body);
  if (
    landmark !== null &&
    landmark !== best &&
    keptProse(best, pruned) < LANDMARK_SECTION_SHARE * keptProse(landmark, pruned)
  )
    return { main: [landmark] };

  // An article in many small containers, a thread of posts, a product's description beside
  // its specifications: the best block is only a part. The prose region around it is the
  // main content when its margin clearly beats the block's own.
  if (
    region !== null &&
    region !== best &&
    contains(region, best) &&
    measures.margin(region) >= REGION_GAIN * measures.margin(best)
  )
    return { main: [region] };
  return null;
}

function strongest(elements: Element[], score: (e: Element) => number, count: number): Element[] {
  return elements.length <= count ? elements : elements.sort((a, b) => score(b) - score(a)).slice(0, count);
}

export function contains(ancestor: Element, element: Element): boolean {
  for (let e: Element | null = element; e !== null; e = e.parent) if (e === ancestor) return true;
  return false;
}

function onlyChild(element: Element): boolean {
  for (const sibling of element.parent!.children)
    if (sibling !== element && (typeof sibling === 'string' ? sibling.trim() !== '' : sibling.chars > 0)) return false;
  return true;
}

function sumProse(element: Element, measures: MeasureTable): number {
  let total = element.block ? proseChars(element) : 0;
  for (const child of element.children) if (typeof child !== 'string') total += sumProse(child, measures);
  measures.setProse(element, total);
  return total;
}

/** Prose characters in the subtree, pruned subtrees left out. */
function keptProse(element: Element, pruned: ReadonlySet<Element>): number {
  let total = element.block ? proseChars(element) : 0;
  for (const child of element.children)
    if (typeof child !== 'string' && !pruned.has(child)) total += keptProse(child, pruned);
  return total;
}

/**
 * The region of the page whose prose outweighs everything else in it by the widest margin:
 * for every element, its prose characters less its other visible characters (links, labels,
 * short lines); the element with the largest margin wins (the body text extraction idea, on
 * the tree). Every element's margin is kept in the measures. A pruned child is left out of its parent's
 * measure, but counts as other text in every ancestor above that: a region that reaches around
 * furniture pays for it (leaving it out everywhere cost the tuned pages 0.001).
 */
function proseRegion(body: Element, core: Element, pruned: Set<Element>, measures: MeasureTable): Element | null {
  let region: Element | null = null;
  let widest = 0;
  const aboveCore = new Set<Element>();
  for (let e: Element | null = core; e !== null; e = e.parent) aboveCore.add(e);
  const measure = (element: Element): number => {
    let prose = element.block ? proseChars(element) : 0;
    let chars = element.chars;
    for (const child of element.children) {
      if (typeof child === 'string') continue;
      if (pruned.has(child)) chars -= child.chars;
      else prose += measure(child);
    }
    // Teasers of other pages are not this page's prose, unless the best block is among them.
    if (prose > 0 && !aboveCore.has(element) && isTeaserList(element)) prose = 0;
    const margin = prose - REGION_NOISE_WEIGHT * (chars - prose);
    measures.setMargin(element, margin);
    if (margin > widest) {
      region = element;
      widest = margin;
    }
    return prose;
  };
  measure(body);
  return region;
}

/**
 * The nearest ancestor of the main block, below the body, whose prose outweighs its other
 * visible text (pruned subtrees and teaser lists aside) by at least `margin` characters: the
 * proseRegion's measure, read after selectMain. A block chosen under the headline does not
 * grow around the block it was chosen over (a notice beside a short article). Null when there
 * is none.
 */
export function proseAncestor(
  selection: { readonly main: readonly Element[]; readonly overruled?: Element | undefined },
  body: Element,
  margin: number,
  measures: Measures,
): Element | null {
  const { overruled } = selection;
  for (let e = selection.main[0]!.parent; e !== null && e !== body; e = e.parent) {
    if (overruled !== undefined && contains(e, overruled)) return null;
    if (measures.margin(e) >= margin) return e;
  }
  return null;
}

/** The wanted elements under `root`, in document order (none of them inside another). */
export function inDocumentOrder(root: Element, wanted: ReadonlySet<Element>): Element[] {
  const ordered: Element[] = [];
  const visit = (element: Element) => {
    if (wanted.has(element)) {
      ordered.push(element);
      return;
    }
    for (const child of element.children) if (typeof child !== 'string') visit(child);
  };
  visit(root);
  return ordered;
}

/** The page's main landmark (`<main>` or role main) at or above the element, below the body. */
function mainLandmarkAbove(element: Element, body: Element): Element | null {
  for (let e: Element | null = element; e !== null && e !== body; e = e.parent)
    if (e.tag === 'main' || e.role === 'main') return e;
  return null;
}

/** Repeated items this short, each with this share of link text, are teasers of other pages. */
const TEASER_MAX_CHARS = 600;
const TEASER_LINK_SHARE = 0.15;
const MIN_ITEMS = 3;

/**
 * A list of teasers: at least three children built alike (same tag and class, digits aside),
 * most of the children, each short and with a headline-sized share of link text.
 */
export function isTeaserList(element: Element): boolean {
  const items = repeatedItems(element);
  return (
    items.length >= MIN_ITEMS &&
    items.every(
      (item) =>
        item.chars <= TEASER_MAX_CHARS && (item.linkChars >= item.chars * TEASER_LINK_SHARE || hasLinkedHeading(item)),
    )
  );
}

/** A heading that is all link: a headline pointing to another page. */
function hasLinkedHeading(element: Element): boolean {
  for (const child of element.children) {
    if (typeof child === 'string') continue;
    if (HEADING_TAGS.has(child.tag) && child.chars > 0 && child.linkChars >= child.chars * 0.8) return true;
    if (hasLinkedHeading(child)) return true;
  }
  return false;
}

/** The largest group of element children built alike, when it is most of the children; else none. */
export function repeatedItems(element: Element): Element[] {
  const groups = new Map<string, Element[]>();
  let count = 0;
  for (const child of element.children) {
    if (typeof child === 'string' || child.chars === 0) continue;
    count += 1;
    const key = `${child.tag} ${child.signal.replace(/[0-9]+/g, '')}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [child]);
    else group.push(child);
  }
  let largest: Element[] = [];
  for (const group of groups.values()) if (group.length > largest.length) largest = group;
  return largest.length * 2 > count ? largest : [];
}

/** Text of a heading that can be the page's headline, against the page title. */
function isHeadline(element: Element, title: string): boolean {
  const text = renderInline(element);
  return text.length >= 10 && (title.includes(text) || text.includes(title));
}

/**
 * The nearest block around the page's headline (the first h1 whose text the title contains,
 * or which contains the title) that holds a paragraph of prose; null when there is none.
 */
function headlineBlock(body: Element, title: string | null, pruned: Set<Element>, measures: Measures): Element | null {
  if (title === null) return null;
  const headline = find(body, (e) => e.tag === 'h1' && !pruned.has(e) && isHeadline(e, title), pruned);
  if (headline === null) return null;
  for (let block = headline.parent; block !== null && block !== body; block = block.parent)
    if (measures.prose(block) >= SIBLING_PROSE_CHARS) return block;
  return null;
}

function find(element: Element, test: (e: Element) => boolean, pruned: Set<Element>): Element | null {
  for (const child of element.children) {
    if (typeof child === 'string' || pruned.has(child)) continue;
    if (test(child)) return child;
    const found = find(child, test, pruned);
    if (found !== null) return found;
  }
  return null;
}

function renderInline(element: Element): string {
  let text = '';
  for (const child of element.children) text += typeof child === 'string' ? child : renderInline(child);
  return text.replace(/\s+/g, ' ').trim();
}

/** Items in a row that make a list of things (products, events, records) rather than a menu. */
const MIN_LIST_ITEMS = 5;
/** Average visible characters per item below which a list is a menu of labels. */
const MIN_ITEM_CHARS = 20;

/**
 * The largest list of items built alike (five or more, with 20 visible characters each on
 * average) outside the pruned furniture: where a page with no article keeps its content (a
 * catalogue, a list of events or records). Null when the page has none.
 */
export function largestItemList(body: Element, pruned: ReadonlySet<Element>): Element | null {
  let largest: Element | null = null;
  let largestChars = 0;
  const visit = (element: Element) => {
    const items = repeatedItems(element);
    if (items.length >= MIN_LIST_ITEMS) {
      const chars = items.reduce((sum, item) => sum + (pruned.has(item) ? 0 : item.chars), 0);
      if (chars >= items.length * MIN_ITEM_CHARS && chars > largestChars) {
        largest = element;
        largestChars = chars;
      }
    }
    for (const child of element.children) if (typeof child !== 'string' && !pruned.has(child)) visit(child);
  };
  visit(body);
  return largest;
}

/** An amount of money: a currency sign next to a digit. Signs, not words, so any language. */
const PRICE = /[$\u00a3\u20ac\u00a5\u20b9]\s?\d|\d\s?[\u00a3\u20ac]/;
/** Share of a list's items with a price that makes it a list of things for sale. */
const PRICED_SHARE = 0.8;

/** A list of items for sale: most of its repeated items show a price. */
export function isPricedList(list: Element): boolean {
  const items = repeatedItems(list);
  return (
    items.length > 0 && items.filter((item) => PRICE.test(renderInline(item))).length >= items.length * PRICED_SHARE
  );
}

/** The nearest element holding both. */
function commonAncestor(a: Element, b: Element): Element {
  let e = a;
  while (!contains(e, b)) e = e.parent!;
  return e;
}

/** Children of the element that hold prose, pruned subtrees aside. */
function sectionsOfProse(element: Element, pruned: ReadonlySet<Element>): number {
  let sections = 0;
  for (const child of element.children)
    if (typeof child !== 'string' && !pruned.has(child) && keptProse(child, pruned) > 0) sections += 1;
  return sections;
}
