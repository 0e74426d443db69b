// A light element tree built straight from htmlparser2's tokenizer, in one pass. htmlparser2's
// own Parser keeps its open-element stack with Array.unshift, which makes deeply nested input
// quadratic (50,000 nested <div> take over a second); this builder pushes and pops instead, caps
// the tree depth, and counts open elements by name so an unmatched end tag costs O(1).
//
// While building it already drops what is never content (scripts, styles, templates, forms'
// controls, embedded objects, hidden elements) and measures every element as it closes: its
// visible characters, the characters inside links, and the characters of its own inline text.

import { Tokenizer } from 'htmlparser2';

export class Element {
  readonly tag: string;
  /** Lower-cased class, id and itemprop: the tokens the boilerplate and kind rules read. */
  readonly signal: string;
  readonly role: string;
  /** The schema.org item type (itemtype), lower-cased; '' when none. */
  itemtype = '';
  readonly parent: Element | null;
  readonly children: (Element | string)[] = [];
  readonly block: boolean;
  /** Visible characters (whitespace excluded; dense scripts weighted, see charWeight) in the whole subtree. */
  chars = 0;
  /** Of those, characters inside links. */
  linkChars = 0;
  /** Of those, characters inside headings (h1-h6). */
  headingChars = 0;
  /** Characters of text that is not inside a child block: this element's own running text. */
  inlineChars = 0;
  /** Of the inline characters, those inside links. */
  inlineLinkChars = 0;

  /** `inline`: styled `display: inline` in the markup, whatever the tag. */
  constructor(tag: string, signal: string, role: string, parent: Element | null, inline = false) {
    this.tag = tag;
    this.signal = signal;
    this.role = role;
    this.parent = parent;
    // Custom elements (a hyphen in the name) render inline, as browsers render unknown tags.
    this.block = !inline && !INLINE.has(tag) && !tag.includes('-');
  }
}

export interface Page {
  body: Element;
  /** The <title> text, else og:title; whitespace collapsed. */
  title: string;
  /** The og:type the page declares ("article", "product", ...), lower-cased; '' when none. */
  ogType: string;
  /** Elements deeper than MAX_DEPTH were flattened into their ancestor. */
  flattened: boolean;
}

/** The attributes the cleaner reads; others are not even collected. */
const ATTRIBUTES = new Set([
  'class',
  'id',
  'role',
  'itemprop',
  'itemtype',
  'style',
  'hidden',
  'aria-hidden',
  'type',
  'property',
  'name',
  'content',
]);

/** Elements whose text is a heading. */
export const HEADING_TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

/** Deeper than this, elements are not built: their text joins the deepest built ancestor. */
export const MAX_DEPTH = 160;

/** Subtrees that never hold readable content. */
const DROPPED = new Set([
  'script',
  'style',
  'template',
  'noscript',
  'svg',
  'math',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'canvas',
  'select',
  'button',
  'textarea',
  'datalist',
  'option',
  'optgroup',
  'audio',
  'video',
  'map',
  'head',
  'input',
  'title',
]);
/** What may sit in <head>; any other start tag there ends the head, as in browsers. */
const HEAD_CONTENT = new Set(['title', 'meta', 'link', 'script', 'style', 'base', 'noscript', 'template']);
const VOID = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
/** Phrasing elements: their text runs on inside the enclosing block. */
export const INLINE = new Set([
  'a',
  'abbr',
  'acronym',
  'b',
  'bdi',
  'bdo',
  'big',
  'cite',
  'code',
  'data',
  'del',
  'dfn',
  'em',
  'font',
  'i',
  'img',
  'ins',
  'kbd',
  'label',
  'mark',
  'nobr',
  'q',
  'rp',
  'rt',
  'ruby',
  's',
  'samp',
  'small',
  'span',
  'strike',
  'strong',
  'sub',
  'sup',
  'time',
  'tt',
  'u',
  'var',
  'wbr',
  'picture',
  'output',
  'meter',
  'progress',
]);
/** Inline elements with no class or id are not worth a node: their text goes to the parent. */
const FORMATTING = new Set([
  'abbr',
  'acronym',
  'b',
  'bdi',
  'bdo',
  'big',
  'cite',
  'code',
  'data',
  'del',
  'dfn',
  'em',
  'font',
  'i',
  'ins',
  'kbd',
  'mark',
  'nobr',
  'q',
  'rp',
  'rt',
  'ruby',
  's',
  'samp',
  'small',
  'span',
  'strike',
  'strong',
  'sub',
  'sup',
  'time',
  'tt',
  'u',
  'var',
]);

/** An opening tag closes these when they are the current element (a subset of HTML's rules). */
const P_CLOSERS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'details',
  'div',
  'dl',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'ul',
]);
function impliedClose(opening: string, open: string): boolean {
  if (open === 'p') return P_CLOSERS.has(opening);
  switch (opening) {
    case 'li':
      return open === 'li';
    case 'dt':
    case 'dd':
      return open === 'dt' || open === 'dd';
    case 'tr':
      return open === 'tr' || open === 'td' || open === 'th';
    case 'td':
    case 'th':
      return open === 'td' || open === 'th';
    case 'tbody':
    case 'tfoot':
    case 'thead':
      return open === 'tbody' || open === 'thead' || open === 'tr' || open === 'td' || open === 'th';
    case 'a':
      return open === 'a';
    default:
      return HEADING_TAGS.has(opening) && HEADING_TAGS.has(open);
  }
}

/** A line break inside running text (<br>, and block edges below MAX_DEPTH). */
export const LINE_BREAK = new Element('br', '', '', null);

/** Adds a line break unless one ends the children already (two in a row read as one). */
function addLineBreak(element: Element): void {
  const kids = element.children;
  if (kids[kids.length - 1] !== LINE_BREAK) kids.push(LINE_BREAK);
}

export function isSpace(code: number): boolean {
  return (
    code <= 32 ||
    code === 160 ||
    (code >= 0x2000 && code <= 0x200b) ||
    code === 0x3000 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0xfeff ||
    code === 0x1680 ||
    code === 0x85
  );
}

/** An inline style of `display: inline` (not inline-block, which still breaks the line for us: it is laid out as a box). */
function styledInline(attrs: Map<string, string>): boolean {
  const style = attrs.get('style');
  return style !== undefined && /display\s*:\s*inline\s*(?:;|!|$)/i.test(style);
}

/**
 * Characters of a script that writes a word in one or two signs (Han, kana, Hangul) carry
 * about as much text as three Latin letters: they count three times wherever text is
 * measured, so every threshold in characters means the same amount of text in every script.
 */
export const DENSE_SCRIPT_WEIGHT = 3;

export function charWeight(code: number): number {
  return (code >= 0x3040 && code <= 0x30ff) || // hiragana, katakana
    (code >= 0x3400 && code <= 0x9fff) || // CJK ideographs (extension A and unified)
    (code >= 0xac00 && code <= 0xd7af) || // Hangul syllables
    (code >= 0xf900 && code <= 0xfaff) // CJK compatibility ideographs
    ? DENSE_SCRIPT_WEIGHT
    : 1;
}

/**
 * Class and id fragments of a disclosure widget's panel (an accordion's answer, a collapsed
 * section, a tab's pane): hidden only until its question or tab is clicked.
 */
const DISCLOSURE = /answer|accordion|collaps|faq|tab-?pane|tab-?content|toggle-?content/;

function hidden(attrs: Map<string, string>, seeInvisible: boolean): boolean {
  const style = attrs.get('style')?.replace(/\s+/g, '').toLowerCase() ?? '';
  const hiddenHere =
    attrs.has('hidden') ||
    attrs.get('aria-hidden') === 'true' ||
    attrs.get('type') === 'hidden' ||
    style.includes('display:none') ||
    (!seeInvisible && style.includes('visibility:hidden'));
  // A tab panel or an accordion's answer is hidden only until its tab or question is clicked
  // (the page's other platforms, a product's questions and answers): content, like the panel
  // shown.
  return (
    hiddenHere &&
    attrs.get('role') !== 'tabpanel' &&
    !DISCLOSURE.test(`${attrs.get('class') ?? ''} ${attrs.get('id') ?? ''}`.toLowerCase())
  );
}

export interface TreeOptions {
  /**
   * Keeps `visibility: hidden` subtrees: a page that hides all of itself until its scripts have
   * run (a loading curtain) is read as its scripts would show it.
   */
  seeInvisible?: boolean;
}

/**
 * In HTML, `<![CDATA[` opens a CDATA section only inside SVG or MathML; anywhere else it is a
 * bogus comment that ends at the next `>`. htmlparser2's tokenizer reads a section up to `]]>`
 * everywhere, so one stray opener (a script's wrapper left behind when the script was cut out)
 * hides the rest of the page. Written as `<?`, the same length, it is the bogus comment the
 * standard reads. Both kinds of foreign content are dropped from the tree, so their sections
 * are never needed.
 */
function outsideForeignContent(html: string): string {
  return html.includes('<![CDATA[') ? html.replaceAll('<![CDATA[', '<?[CDATA[') : html;
}

/** Builds the tree of a whole document. Never throws on well-typed input. */
export function buildTree(source: string, options: TreeOptions = {}): Page {
  const html = outsideForeignContent(source);
  const seeInvisible = options.seeInvisible === true;
  const body = new Element('body', '', '', null);
  let title = '';
  let ogTitle = '';
  let ogType = '';
  let flattened = false;

  // The open-element stack: tag names, and the element each entry writes into (an entry that
  // built no node writes into its parent's element). skip > 0 while inside a dropped subtree.
  const names: string[] = [];
  const targets: Element[] = [];
  const openCount = new Map<string, number>();
  let current = body;
  let depth = 0;
  let skip = 0;
  let skipRoot = '';
  let inTitle = false;

  let tagName = '';
  let attrName = '';
  let attrValue = '';
  let attrWanted = false;
  const attrs = new Map<string, string>();

  const addText = (text: string) => {
    if (inTitle) title += text;
    if (skip > 0) return;
    const kids = current.children;
    const last = kids.length - 1;
    if (last >= 0 && typeof kids[last] === 'string') kids[last] += text;
    else kids.push(text);
  };

  const close = (element: Element) => {
    // The element's own text is counted now that its children are complete.
    let text = 0;
    let chars = 0;
    let links = 0;
    let headings = 0;
    let inline = 0;
    let inlineLinks = 0;
    for (const child of element.children) {
      if (typeof child === 'string') {
        for (let i = 0; i < child.length; i++) {
          const code = child.charCodeAt(i);
          if (!isSpace(code)) text += charWeight(code);
        }
      } else {
        chars += child.chars;
        links += child.linkChars;
        headings += child.headingChars;
        if (!child.block) {
          inline += child.inlineChars;
          inlineLinks += child.inlineLinkChars;
        }
      }
    }
    const isLink = element.tag === 'a';
    element.chars = chars + text;
    element.linkChars = isLink ? element.chars : links;
    element.headingChars = HEADING_TAGS.has(element.tag) ? element.chars : headings;
    element.inlineChars = inline + text;
    element.inlineLinkChars = isLink ? element.inlineChars : inlineLinks;
  };

  const pop = () => {
    const name = names.pop()!;
    const target = targets.pop()!;
    openCount.set(name, openCount.get(name)! - 1);
    if (name === 'title') inTitle = false;
    if (skip > 0) {
      skip -= 1;
      return;
    }
    if (target !== current) {
      close(current);
      current = target;
      depth -= 1;
    } else if (depth >= MAX_DEPTH && !INLINE.has(name)) {
      addLineBreak(current);
    }
  };

  const open = (name: string) => {
    if (skip > 0 && skipRoot === 'head' && !HEAD_CONTENT.has(name)) {
      while (skip > 0) pop();
    }
    while (names.length > 0 && skip === 0 && impliedClose(name, names[names.length - 1]!)) pop();
    if (name === 'title' && title === '' && !openCount.get('svg')) inTitle = true;
    if (name === 'meta') {
      const property = attrs.get('property') ?? attrs.get('name');
      if ((property === 'og:title' || property === 'twitter:title') && ogTitle === '')
        ogTitle = attrs.get('content') ?? '';
      if (property === 'og:type' && ogType === '') ogType = (attrs.get('content') ?? '').trim().toLowerCase();
    }
    if (skip > 0) {
      if (!VOID.has(name)) {
        names.push(name);
        targets.push(current);
        openCount.set(name, (openCount.get(name) ?? 0) + 1);
        skip += 1;
      }
      return;
    }
    if (name === 'br' || name === 'hr') {
      addLineBreak(current);
      if (name === 'br') return;
    }
    if (VOID.has(name)) return;
    names.push(name);
    openCount.set(name, (openCount.get(name) ?? 0) + 1);
    if (DROPPED.has(name) || hidden(attrs, seeInvisible)) {
      targets.push(current);
      skip = 1;
      skipRoot = name;
      return;
    }
    if (name === 'html' || name === 'body') {
      targets.push(current);
      return;
    }
    const cls = attrs.get('class');
    const id = attrs.get('id');
    if ((FORMATTING.has(name) && cls === undefined && id === undefined) || depth >= MAX_DEPTH) {
      if (depth >= MAX_DEPTH) {
        flattened = true;
        if (!INLINE.has(name)) addLineBreak(current);
      }
      targets.push(current);
      return;
    }
    const itemprop = attrs.get('itemprop');
    const signal =
      cls === undefined && id === undefined && itemprop === undefined
        ? ''
        : `${cls ?? ''} ${id ?? ''} ${itemprop ?? ''}`.toLowerCase();
    const role = attrs.get('role');
    const element = new Element(
      name,
      signal,
      role === undefined ? '' : role.toLowerCase(),
      current,
      styledInline(attrs),
    );
    const itemtype = attrs.get('itemtype');
    if (itemtype !== undefined) element.itemtype = itemtype.toLowerCase();
    current.children.push(element);
    targets.push(current);
    current = element;
    depth += 1;
  };

  // Tag names are interned: the open-element stack of a deeply nested page holds millions.
  const tagNames = new Map<string, string>();
  const readName = (start: number, end: number) => {
    const raw = html.slice(start, end);
    let name = tagNames.get(raw);
    if (name === undefined) {
      name = raw.toLowerCase();
      if (tagNames.size < 4096) tagNames.set(raw, name);
    }
    return name;
  };

  const tokenizer = new Tokenizer(
    { decodeEntities: true },
    {
      onopentagname(start, end) {
        tagName = readName(start, end);
        attrs.clear();
      },
      onattribname(start, end) {
        attrName = html.slice(start, end).toLowerCase();
        attrWanted = ATTRIBUTES.has(attrName) && !attrs.has(attrName);
      },
      onattribdata(start, end) {
        if (attrWanted) attrValue += html.slice(start, end);
      },
      onattribentity(code) {
        if (attrWanted) attrValue += String.fromCodePoint(code);
      },
      onattribend() {
        if (attrWanted) attrs.set(attrName, attrValue);
        attrValue = '';
      },
      onopentagend() {
        open(tagName);
        tagName = '';
      },
      onselfclosingtag() {
        open(tagName);
        tagName = '';
      },
      onclosetag(start, end) {
        const name = readName(start, end);
        if (name === 'br') {
          if (skip === 0) addLineBreak(current);
          return;
        }
        if (name === 'p' && !openCount.get('p')) {
          if (skip === 0) addLineBreak(current);
          return;
        }
        if (!openCount.get(name)) return;
        while (names.length > 0) {
          const top = names[names.length - 1];
          pop();
          if (top === name) break;
        }
      },
      ontext(start, end) {
        addText(html.slice(start, end));
      },
      ontextentity(code) {
        addText(String.fromCodePoint(code));
      },
      oncdata() {},
      oncomment() {},
      ondeclaration() {},
      onprocessinginstruction() {},
      onend() {},
    },
  );
  tokenizer.write(html);
  tokenizer.end();
  while (names.length > 0) pop();
  while (current !== body) {
    close(current);
    current = current.parent!;
  }
  close(body);
  return { body, title: (title || ogTitle).replace(/\s+/g, ' ').trim(), ogType, flattened };
}

/** Whether the test holds for the element (when `self`) or any element below it. */
export function someElement(element: Element, test: (e: Element) => boolean, self = false): boolean {
  if (self && test(element)) return true;
  for (const child of element.children) if (typeof child !== 'string' && someElement(child, test, true)) return true;
  return false;
}

/**
 * The heading that is all the element holds, through wrappers of one child each (a section's
 * header, a builder's heading widget); null when the element holds anything else.
 */
export function soleHeading(element: Element): Element | null {
  for (let e: Element | null = element; e !== null;) {
    if (HEADING_TAGS.has(e.tag)) return e;
    let only: Element | null = null;
    for (const child of e.children) {
      if (typeof child === 'string') {
        if (child.trim() !== '') return null;
      } else if (child.chars > 0) {
        if (only !== null) return null;
        only = child;
      }
    }
    e = only;
  }
  return null;
}
