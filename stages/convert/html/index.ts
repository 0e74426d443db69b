// The in-process HTML cleaner (docs/behaviour/stages.md#stage-2-conversion; POST /extract and the
// URL path use it too): HTML in, the main content as readable plain text out, with a verdict and
// warnings that say how much to trust it. The steps live beside this file: decode (bytes to text by BOM or
// declared charset), tree (one tokenizer pass into a light element tree, dropping what is never
// content and measuring text and link characters), content (choosing the main block by prose
// and link density and boilerplate markup), kind (what kind of page it is), rules (the named
// overrides and growth of that choice, each a new selection: selection.ts) and render (blocks
// to text). The rules for verdicts and warnings are in docs/DECISIONS.md ("HTML cleaner").
//
// It never throws: any input, however malformed, yields a verdict.

import { isBoilerplate, selectMain } from './content.ts';
import { decodeHtml, repairMojibake } from './decode.ts';
import { pageKind, type PageKind } from './kind.ts';
import { renderText } from './render.ts';
import { applyRules, THIN_CHARS } from './rules.ts';
import { LINK_LIST_SHARE, SelectionTexts, visibleChars, type Selection } from './selection.ts';
import { buildTree } from './tree.ts';

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
    return mainContentOf(html, warnings);
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

/**
 * The page's main content as text: the tree, the main block chosen by prose (content.ts) and
 * the kind of page (kind.ts), then the named rules that override or grow that choice
 * (rules.ts), and the verdict on what is left.
 */
function mainContentOf(html: string, warnings: string[]): CleanedHtml {
  let page = buildTree(html);
  // Next to nothing visible, and something made invisible: a loading curtain over the page.
  if (page.body.chars < THIN_CHARS && /visibility\s*:\s*hidden/i.test(html)) {
    const unveiled = buildTree(html, { seeInvisible: true });
    if (unveiled.body.chars > page.body.chars) page = unveiled;
  }
  if (page.flattened) warnings.push('nesting_flattened');
  const title = page.title === '' ? null : page.title;
  if (page.body.chars === 0) return { text: '', verdict: 'empty', warnings, title };

  const { main, pruned, overruled, measures } = selectMain(page.body, title);
  const chosen: Selection = {
    main,
    pruned,
    overruled,
    kind: pageKind(page.body, main, page.ogType),
    keepLinkLists: false,
    whole: false,
  };
  const texts = new SelectionTexts(title);
  const selection = applyRules(chosen, { body: page.body, measures, texts });
  let { blocks } = texts.of(selection);
  const { kind } = selection;
  const found = blocks.length > 0;
  if (!found) {
    // No block of prose anywhere, or nothing left of it: the text without furniture, else all.
    warnings.push('no_main_block');
    blocks = renderText(page.body, { skip: (e) => isBoilerplate(e, measures) });
    if (blocks.length === 0) blocks = renderText(page.body, { skip: () => false });
  }
  const text = repairMojibake(blocks.join('\n\n'));
  const verdict = text === '' ? 'empty' : found && visibleChars(text) >= THIN_CHARS ? 'ok' : 'thin';
  if (verdict !== 'ok' && page.body.linkChars > page.body.chars * LINK_LIST_SHARE) warnings.push('mostly_links');
  if (verdict !== 'empty' && kind !== 'article') warnings.push(`${kind}_page`);
  return { text, verdict, warnings, title: title ?? firstHeading(blocks), kind };
}

function firstHeading(blocks: string[]): string | null {
  for (const block of blocks) if (block.startsWith('#')) return block.replace(/^#+ /, '');
  return null;
}
