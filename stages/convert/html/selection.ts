// A selection: what the cleaner takes as the page's main content at one step, and how that
// reads as text. Selections are never changed: each rule of rules.ts returns a new one. Several
// rules weigh the text of the same selection, so SelectionTexts renders each one once.

import type { PageKind } from './kind.ts';
import { renderText } from './render.ts';
import { charWeight, HEADING_TAGS, isSpace, soleHeading, type Element } from './tree.ts';

export interface Selection {
  /** The elements whose text is the main content, in document order; empty when none holds prose. */
  readonly main: readonly Element[];
  /** Subtrees left out when rendering: boilerplate, and on a whole page the teasers of other stories. */
  readonly pruned: ReadonlySet<Element>;
  /** The best-scoring block, when the block under the headline was chosen over it. */
  readonly overruled?: Element | undefined;
  readonly kind: PageKind;
  /** Link lists in the main content are text too: leaving them out would leave less than they hold. */
  readonly keepLinkLists: boolean;
  /** Rendered as it stands: no headline dropped, no edge lines trimmed, no link list left out. */
  readonly whole: boolean;
}

export interface SelectionText {
  blocks: string[];
  /** Visible characters of the blocks (visibleChars). */
  shown: number;
  /** Characters of the link lists left out. */
  skippedLinkChars: number;
}

/** Above this share of link characters, a block is a link list and is left out. */
export const LINK_LIST_SHARE = 0.5;
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

/** The text of each selection of one page, rendered on first use. */
export class SelectionTexts {
  readonly #title: string | null;
  readonly #texts = new WeakMap<Selection, SelectionText>();

  constructor(title: string | null) {
    this.#title = title;
  }

  of(selection: Selection): SelectionText {
    let text = this.#texts.get(selection);
    if (text === undefined) {
      text = selection.whole ? renderWhole(selection) : renderMain(selection, this.#title);
      this.#texts.set(selection, text);
    }
    return text;
  }
}

function renderWhole(selection: Selection): SelectionText {
  const blocks = selection.main.flatMap((element) => renderText(element, { skip: (e) => selection.pruned.has(e) }));
  return { blocks, shown: visibleChars(blocks.join('')), skippedLinkChars: 0 };
}

/**
 * A listing's items are links by nature; on any other page a link list in the main content is
 * furniture, unless such lists are most of it (keepLinkLists). The headline goes (the title is
 * returned on its own), and so do short lines at the edges, except on a listing.
 */
function renderMain(selection: Selection, title: string | null): SelectionText {
  const listing = selection.kind === 'listing';
  const keepLinkLists = selection.keepLinkLists || listing;
  const main = new Set(selection.main);
  let skippedLinkChars = 0;
  const linkList = (element: Element) => {
    if (keepLinkLists || !element.block || element.chars === 0) return false;
    if (LINE_TAGS.has(element.tag)) return false;
    if (element.linkChars <= element.chars * LINK_LIST_SHARE) return false;
    if (soleHeading(element) !== null) return false;
    if (annotatedItems(element)) return false;
    skippedLinkChars += element.chars;
    return true;
  };
  const rendered = dropTitleHeading(
    selection.main.flatMap((element) =>
      renderText(element, { skip: (e) => selection.pruned.has(e) || (!main.has(e) && linkList(e)) }),
    ),
    title,
  );
  // A listing's items are short lines by nature: its edges are items, not furniture.
  const blocks = listing ? rendered : trimEdges(rendered);
  return { blocks, shown: visibleChars(blocks.join('')), skippedLinkChars };
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

/** Visible characters, weighted as the tree weighs them (a Han character counts as three letters). */
export function visibleChars(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!isSpace(code)) count += charWeight(code);
  }
  return count;
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
