// The in-process HTML cleaner (docs/behaviour/stages.md#stage-2-conversion; POST /extract and the
// URL path use it too): HTML in, the main content as readable plain text out, with a verdict and
// warnings that say how much to trust it. The steps live in stages/convert/html/: decode (bytes to
// text by BOM or declared charset), tree (one tokenizer pass into a light element tree, dropping
// what is never content and measuring text and link characters), content (choosing the main block
// by prose and link density and boilerplate markup) and render (blocks to text). The rules for
// verdicts and warnings are in docs/DECISIONS.md ("HTML cleaner").
//
// It never throws: any input, however malformed, yields a verdict.

import {
  contains,
  inDocumentOrder,
  isBoilerplate,
  isPricedList,
  isTeaserList,
  largestItemList,
  proseAncestor,
  selectMain,
} from './html/content.ts';
import { decodeHtml, repairMojibake } from './html/decode.ts';
import { pageKind, withProductRegion, withReplies, withSpecTables, type PageKind } from './html/kind.ts';
import { renderText } from './html/render.ts';
import { buildTree, charWeight, HEADING_TAGS, isSpace, soleHeading, type Element } from './html/tree.ts';

export type HtmlVerdict = 'ok' | 'thin' | 'empty' | 'not_html';

export interface CleanedHtml {
  text: string;
  verdict: HtmlVerdict;
  warnings: string[];
  title?: string | null;
  /** The kind of page the text came from; absent when no text was extracted. */
  kind?: PageKind;
}

/**
 * Input past this size (bytes, or characters for a string) is cut and the result warns
 * `truncated`: the /extract body cap, and a bound on the cleaner's memory in the walk.
 */
export const MAX_INPUT = 20 * 1024 * 1024;
/** A main block with fewer visible characters than this (Latin letters, or a third as many Han, kana or Hangul) is too short to be an article. */
export const THIN_CHARS = 250;
/** A thin main text is joined by the page's largest list of items when the list holds this many times its text. */
const LISTING_GAIN = 2;
/** A thin main text gives way to the whole page less its furniture when that shows this many times its text. */
const WHOLE_PAGE_GAIN = 3;
/** Above this share of link characters, a block is a link list and is left out. */
const LINK_LIST_SHARE = 0.5;
/**
 * A heading, a list item or a table's row or cell is a line of its section, list or table, which
 * decides whether it is a link list: a card's linked title, a checklist's linked step and a
 * table's column of linked names are content like their neighbours.
 */
const LINE_TAGS = new Set([...HEADING_TAGS, 'li', 'tr', 'td', 'th']);
/** Visible characters beyond its link that make a list item say something of its own. */
const ANNOTATION_CHARS = 10;
/** A line at the main block's edge this short (visible characters) may be furniture. */
const EDGE_LINE_CHARS = 40;
const SENTENCE_END = /[.!?\u3002\uff01\uff1f]$/;
/** Only the head is sniffed for markup and binary noise. */
const SNIFF_CHARS = 65_536;

export function cleanHtml(input: string | Uint8Array): CleanedHtml {
  const warnings: string[] = [];
  try {
    const truncated = input.length > MAX_INPUT;
    let html: string;
    if (typeof input === 'string') {
      html = truncated ? input.slice(0, MAX_INPUT) : input;
    } else {
      const decoded = decodeHtml(truncated ? input.subarray(0, MAX_INPUT) : input);
      if (decoded.warning !== null) warnings.push(decoded.warning);
      html = decoded.text;
    }
    if (!looksLikeHtml(html)) return { text: '', verdict: 'not_html', warnings, title: null };
    if (truncated) warnings.push('truncated');
    return extract(html, warnings);
  } catch {
    return { text: '', verdict: 'empty', warnings: [...warnings, 'parse_failed'], title: null };
  }
}

/** Markup near the start, and not binary: control characters are rare in any real page. */
function looksLikeHtml(text: string): boolean {
  const head = text.length > SNIFF_CHARS ? text.slice(0, SNIFF_CHARS) : text;
  if (!/<(?:!doctype|!--|\/?[a-z][a-z0-9-]*[\s/>])/i.test(head)) return false;
  let controls = 0;
  for (let i = 0; i < head.length; i++) {
    const code = head.charCodeAt(i);
    if (code < 32 && code !== 9 && code !== 10 && code !== 12 && code !== 13) controls += 1;
  }
  return controls <= head.length / 100;
}

/**
 * The whole document as readable text, with no main-content selection: for HTML that is all
 * content by construction (a word-processor document converted to HTML).
 */
export function htmlToText(html: string): string {
  return renderText(buildTree(html).body, { skip: () => false }).join('\n\n');
}

function extract(html: string, warnings: string[]): CleanedHtml {
  let page = buildTree(html);
  // Next to nothing visible, and something made invisible: a loading curtain over the page.
  if (page.body.chars < THIN_CHARS && /visibility\s*:\s*hidden/i.test(html)) {
    const unveiled = buildTree(html, { seeInvisible: true });
    if (unveiled.body.chars > page.body.chars) page = unveiled;
  }
  if (page.flattened) warnings.push('nesting_flattened');
  const title = page.title === '' ? null : page.title;
  if (page.body.chars === 0) return { text: '', verdict: 'empty', warnings, title };

  const selection = selectMain(page.body, title);
  let kind = pageKind(page.body, selection.main, page.ogType);
  if (kind === 'product')
    selection.main = withSpecTables(withProductRegion(selection.main, page.body), selection.pruned);
  if (kind === 'forum') selection.main = withReplies(selection.main, selection.pruned);
  // A listing's items are links by nature; on any other page a link list in the main block is
  // furniture, unless such lists are most of it (a page of references, a wiki's index page).
  let keepLinkLists = false;
  let skippedLinkChars = 0;
  const linkList = (element: Element) => {
    if (keepLinkLists || kind === 'listing' || !element.block || element.chars === 0) return false;
    if (LINE_TAGS.has(element.tag)) return false;
    if (element.linkChars <= element.chars * LINK_LIST_SHARE) return false;
    if (soleHeading(element) !== null) return false;
    if (annotatedItems(element)) return false;
    skippedLinkChars += element.chars;
    return true;
  };
  let main = new Set(selection.main);
  const render = () => {
    skippedLinkChars = 0;
    const rendered = dropTitleHeading(
      selection.main.flatMap((element) =>
        renderText(element, { skip: (e) => selection.pruned.has(e) || (!main.has(e) && linkList(e)) }),
      ),
      title,
    );
    // A listing's items are short lines by nature: its edges are items, not furniture.
    return kind === 'listing' ? rendered : trimEdges(rendered);
  };
  let blocks = render();
  let shown = visibleChars(blocks.join(''));
  if (skippedLinkChars > shown) {
    keepLinkLists = true;
    blocks = render();
    shown = visibleChars(blocks.join(''));
  }
  // A thin block inside a wider run of prose (a product's description tab beside its
  // specifications): the nearest ancestor whose prose outweighs its other text by an article's
  // worth is the main content.
  const wider =
    shown < THIN_CHARS && selection.main.length === 1 ? proseAncestor(selection, page.body, THIN_CHARS) : null;
  if (wider !== null) {
    selection.main = [wider];
    main = new Set(selection.main);
    blocks = render();
    shown = visibleChars(blocks.join(''));
  }
  // A page of items keeps its list: little or no prose (a catalogue, events, records) is joined
  // by the page's largest list of items when that holds twice as much, and a shop's text (a
  // category's introduction) by its grid of priced items when that holds as much. Such a grid
  // lies outside the main text, so a page with less than that outside it (an article that is
  // most of its page) is not walked for one.
  const mainChars = selection.main.reduce((sum, m) => sum + m.chars, 0);
  const list =
    shown < THIN_CHARS || (kind !== 'listing' && page.body.chars - mainChars >= shown)
      ? largestItemList(page.body, selection.pruned)
      : null;
  if (
    list !== null &&
    (shown < THIN_CHARS
      ? list.chars >= LISTING_GAIN * shown
      : isPricedList(list) &&
        list.chars >= shown &&
        !selection.main.some((m) => contains(m, list) || contains(list, m)))
  ) {
    // As a listing, nothing in it is skipped as a link list: the items are what it holds.
    selection.main = withList(page.body, selection.main, list);
    kind = 'listing';
    blocks = render();
  }
  // Still thin after every growth, and not a short article chosen under its headline: a page
  // with no article (a hub of categories, a table of rankings). The page without its furniture
  // is the content when it shows three times as much; teasers of other stories (a linked
  // headline and a summary of prose each) are not part of it, so a short news item stays alone.
  shown = visibleChars(blocks.join(''));
  if (blocks.length > 0 && shown < THIN_CHARS && selection.overruled === undefined) {
    const otherStories = (e: Element) => !selection.main.includes(e) && e.prose > 0 && isTeaserList(e);
    const wholePage = renderText(page.body, { skip: (e) => selection.pruned.has(e) || otherStories(e) });
    if (visibleChars(wholePage.join('')) >= WHOLE_PAGE_GAIN * shown) blocks = wholePage;
  }
  const found = blocks.length > 0;
  if (!found) {
    // No block of prose anywhere, or nothing left of it: the text without furniture, else all.
    warnings.push('no_main_block');
    blocks = renderText(page.body, { skip: isBoilerplate });
    if (blocks.length === 0) blocks = renderText(page.body, { skip: () => false });
  }
  const text = repairMojibake(blocks.join('\n\n'));
  const verdict = text === '' ? 'empty' : found && visibleChars(text) >= THIN_CHARS ? 'ok' : 'thin';
  if (verdict !== 'ok' && page.body.linkChars > page.body.chars * LINK_LIST_SHARE) warnings.push('mostly_links');
  if (verdict !== 'empty' && kind !== 'article') warnings.push(`${kind}_page`);
  return { text, verdict, warnings, title: title ?? firstHeading(blocks), kind };
}

/**
 * The headline repeats the title, which is returned on its own: one of the first blocks that
 * the title contains (titles often add the site's name) goes.
 */
function dropTitleHeading(blocks: string[], title: string | null): string[] {
  if (title === null) return blocks;
  const index = blocks.slice(0, 3).findIndex((block) => {
    const text = block.replace(/^#+ /, '');
    return text.length >= 10 && text.length >= title.length * 0.4 && title.includes(text);
  });
  return index < 0 ? blocks : blocks.filter((_, i) => i !== index);
}

/**
 * Short lines without a sentence's end at either edge of the main block are its furniture
 * (datelines, "Text size", share labels, a lone author name), not its text; a block of only
 * such lines is kept as it is.
 */
function trimEdges(blocks: string[]): string[] {
  const furniture = (block: string) =>
    !block.startsWith('#') &&
    !block.startsWith('- ') &&
    !block.includes(' | ') &&
    visibleChars(block) <= EDGE_LINE_CHARS &&
    !SENTENCE_END.test(block);
  let start = 0;
  while (start < blocks.length && furniture(blocks[start]!)) start++;
  let end = blocks.length;
  while (end > start && furniture(blocks[end - 1]!)) end--;
  return start === end ? blocks : blocks.slice(start, end);
}

function firstHeading(blocks: string[]): string | null {
  for (const block of blocks) if (block.startsWith('#')) return block.replace(/^#+ /, '');
  return null;
}

/** Visible characters, weighted as the tree weighs them (a Han character counts as three letters). */
function visibleChars(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!isSpace(code)) count += charWeight(code);
  }
  return count;
}

/**
 * The main elements with the list added, in document order: a main element that holds the
 * list already keeps it (its text around the list stays), unless it is the whole body; one
 * inside the list gives way to it.
 */
function withList(body: Element, main: Element[], list: Element): Element[] {
  if (main.some((m) => m !== body && contains(m, list))) return main;
  return inDocumentOrder(body, new Set([...main.filter((m) => !contains(list, m) && !contains(m, list)), list]));
}

/** A list whose every item says something beyond its link (a phone number, a description). */
function annotatedItems(element: Element): boolean {
  if (element.tag !== 'ul' && element.tag !== 'ol') return false;
  let items = 0;
  for (const child of element.children) {
    if (typeof child === 'string' || child.chars === 0) continue;
    if (child.tag !== 'li' || child.chars - child.linkChars < ANNOTATION_CHARS) return false;
    items += 1;
  }
  return items >= 2;
}
