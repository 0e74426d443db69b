import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { cleanHtml, htmlToText, MAX_INPUT, type CleanedHtml } from '../stages/convert/html/index.ts';

const VERDICTS = ['ok', 'thin', 'empty', 'not_html'];
const WARNINGS = [
  'truncated',
  'no_main_block',
  'charset_guessed',
  'charset_unknown',
  'mostly_links',
  'nesting_flattened',
  'forum_page',
  'product_page',
  'documentation_page',
  'listing_page',
];

/** What every result must satisfy, whatever went in. */
function assertWellFormed(result: CleanedHtml): void {
  assert.ok(VERDICTS.includes(result.verdict), result.verdict);
  for (const warning of result.warnings) assert.ok(WARNINGS.includes(warning), warning);
  assert.is(new Set(result.warnings).size, result.warnings.length, 'no warning twice');
  assert.is(typeof result.text, 'string');
  assert.is(result.text, result.text.trim(), 'no surrounding whitespace');
  assert.not.match(result.text, /\n{3,}/, 'blocks are separated by exactly one blank line');
  assert.not.match(result.text, /[ \t]\n|\n[ \t]|\r/, 'lines are trimmed');
  assert.not.match(result.text, /[ \t]{2,}/, 'whitespace is collapsed');
  if (result.verdict === 'empty' || result.verdict === 'not_html') assert.is(result.text, '');
  else assert.ok(result.text.length > 0);
}

const paragraph = (n: number) =>
  `<p>Paragraph ${n} of the report explains, in plain words and at some length, what the committee decided and why it matters to the region.</p>`;
const ARTICLE = `<!doctype html><html><head><title>Budget approved | The Gazette</title><meta charset="utf-8"></head><body>
  <header class="site-header"><a href="/">The Gazette</a> <a href="/news">News</a> <a href="/sport">Sport</a></header>
  <nav><ul><li><a href="/a">World</a></li><li><a href="/b">Business</a></li></ul></nav>
  <div id="cookie-consent">We use cookies to improve your experience on this website, please accept them all now.</div>
  <main><article>
    <h1>Budget approved</h1>
    <div class="share-bar"><a href="/s/fb">Share on a social network</a> <a href="/s/mail">Send by mail to a friend</a></div>
    ${paragraph(1)}${paragraph(2)}
    <h2>What &amp; why</h2>
    ${paragraph(3)}
    <ul><li>First point</li><li>Second point</li></ul>
    <table><tr><th>Year</th><th>Amount</th></tr><tr><td>2024</td><td>1,200</td></tr></table>
    ${paragraph(4)}
    <script>document.write('never shown')</script><style>.x{color:red}</style>
    <p style="display: none">Hidden paragraph that only scripts reveal to readers of this page.</p>
    <template><p>Template text that is never rendered by any browser at all.</p></template>
  </article></main>
  <aside class="related"><h3>Related</h3><p>Another story that is long enough to look like prose to a simple counter.</p></aside>
  <section id="comments"><p>Reader comment: I disagree with every single word of this article, honestly.</p></section>
  <footer><p>Copyright The Gazette, all rights reserved, reproduction forbidden without permission.</p></footer>
</body></html>`;

test('an article page: the main text is kept, the page furniture is dropped', () => {
  const result = cleanHtml(ARTICLE);
  assertWellFormed(result);
  assert.is(result.verdict, 'ok');
  assert.equal(result.warnings, []);
  assert.is(result.title, 'Budget approved | The Gazette');
  for (const n of [1, 2, 3, 4]) assert.ok(result.text.includes(`Paragraph ${n} of the report`), `paragraph ${n}`);
  for (const furniture of [
    'News',
    'Business',
    'cookies',
    'Share on',
    'Another story',
    'Reader comment',
    'Copyright',
    'never shown',
    'color:red',
    'Hidden paragraph',
    'Template text',
  ]) {
    assert.not.ok(result.text.includes(furniture), furniture);
  }
  assert.not.match(result.text, /^# Budget approved$/m, 'the headline repeats the title, which is returned apart');
});

test('structure stays readable: blank lines between blocks, headings, list items, table rows, entities decoded', () => {
  const { text } = cleanHtml(ARTICLE);
  const blocks = text.split('\n\n');
  assert.ok(blocks.includes('## What & why'), text);
  assert.ok(blocks.includes('- First point') && blocks.includes('- Second point'), text);
  assert.ok(blocks.includes('Year | Amount') && blocks.includes('2024 | 1,200'), text);
  assert.ok(blocks.indexOf('## What & why') < blocks.indexOf('- First point'), 'document order');
  const lines = cleanHtml(
    `<article>${paragraph(1)}<p>Line one<br>line two &eacute;&#x4E2D;&nbsp;end.</p></article>`,
  ).text;
  assert.match(lines, /\n\nLine one\nline two é中 end\.$/);
});

test('the main block is found by density in any script, without words to recognise', () => {
  const japanese =
    '<p>東京都は、来年度の予算案を発表し、教育と防災に重点を置く方針を示した。関係者によると、財源の確保が今後の課題となる。</p>';
  const arabic =
    '<p>أعلنت الحكومة اليوم عن خطة جديدة لدعم التعليم في المناطق الريفية، وقالت إن التنفيذ سيبدأ الشهر المقبل.</p>';
  const links = Array.from({ length: 12 }, (_, i) => `<li><a href="/${i}">링크 ${i}</a></li>`).join('');
  for (const prose of [japanese, arabic]) {
    const html = `<div class="x1"><ul>${links}</ul></div><div class="x2">${prose.repeat(6)}</div><div class="x3"><ul>${links}</ul></div>`;
    const result = cleanHtml(html);
    assertWellFormed(result);
    assert.is(result.verdict, 'ok');
    assert.not.ok(result.text.includes('링크'), 'the link lists are left out');
    assert.is(result.text.split('\n\n').length, 6);
  }
});

test('an article split over sibling blocks, and sibling prose beside the best block, are kept whole', () => {
  const html =
    `<div class="story"><div class="chunk">${paragraph(1)}${paragraph(2)}</div><div class="ad-slot"><a href="/ad">Buy now</a></div>` +
    `<div class="chunk">${paragraph(3)}${paragraph(4)}</div><div class="chunk">${paragraph(5)}${paragraph(6)}</div>` +
    `<div class="chunk">${paragraph(7)}${paragraph(8)}</div></div><div class="teasers"><p><a href="/t">A teaser headline that links away</a></p></div>`;
  const { text } = cleanHtml(html);
  for (let n = 1; n <= 8; n++) assert.ok(text.includes(`Paragraph ${n} `), `paragraph ${n}`);
  assert.not.ok(text.includes('Buy now'));
  assert.not.ok(text.includes('teaser'));
});

test('an article split over sibling containers deep in page-builder wrappers, with an ad and a "continue reading" link between, is kept whole', () => {
  // Each paragraph sits five wrappers deep, as page builders nest them, under a layout class
  // ("widget"): no single wrapper scores, and the parts are cousins rather than siblings.
  const part = (n: number) =>
    `<section class="builder-section"><div class="builder-container"><div class="builder-column"><div class="builder-wrap"><div class="builder-widget-container">${paragraph(n)}</div></div></div></div></section>`;
  const html =
    `<html><body><header><a href="/">Home</a></header><div class="site"><div class="page">${part(1)}${part(2)}` +
    `<div class="ad-slot"><a href="/ad">Buy now and save</a></div>${part(3)}${part(4)}` +
    `<div class="more"><a href="/more">Continue reading</a></div>${part(5)}${part(6)}</div>` +
    `<ul class="teasers">${[1, 2, 3, 4].map((n) => `<li class="teaser"><h3><a href="/t${n}">Teaser headline number ${n} of the day</a></h3><p>A summary of another story that is long enough to read like prose to a counter, number ${n}.</p></li>`).join('')}</ul>` +
    `</div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.is(result.verdict, 'ok');
  for (let n = 1; n <= 6; n++) assert.ok(result.text.includes(`Paragraph ${n} `), `paragraph ${n}: ${result.text}`);
  assert.not.ok(result.text.includes('Buy now'));
  assert.not.ok(result.text.includes('another story'), 'a list of teasers beside the article is not part of it');
});

test('inline elements stay inside their sentence; dateline and "Text size" lines at the edges are left out', () => {
  const html =
    `<html><head><title>Shares rise after the merger</title></head><body><article><h1>Shares rise after the merger</h1>` +
    `<div class="tools"><span>Text size</span><button>A+</button><button>A-</button></div>` +
    `<div>November 19, 2019 12:21 PM</div>` +
    `<div class="story-text">Shares of <fin-ticker symbol="ACME"><a href="/q/acme">Acme Corporation</a></fin-ticker> rose sharply on Tuesday after the ` +
    `<div style="display: inline">board</div> approved the long-awaited merger with its largest rival in the region.</div>` +
    `${paragraph(2)}<div>Reporting by A. Writer</div></article></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(
    result.text.startsWith('Shares of Acme Corporation rose sharply on Tuesday after the board approved'),
    result.text,
  );
  for (const furniture of ['Text size', 'November 19', 'Reporting by', 'Shares rise after'])
    assert.not.ok(result.text.includes(furniture), furniture);
});

test('a short article under the headline wins over a longer block of other text beside it', () => {
  const notice = `<p>${'Our customer service team answers questions about subscriptions, deliveries and invoices on weekdays from nine to five. '.repeat(4)}</p>`;
  const html =
    `<html><head><title>Council approves the new bridge | Town News</title></head><body>` +
    `<div class="layout"><div class="primary"><h1>Council approves the new bridge</h1><div class="entry">` +
    `<p>The town council approved the new bridge over the river on Monday evening, after two years of debate.</p>` +
    `<p>Work starts in spring and should take eighteen months, the mayor said after the vote.</p></div></div>` +
    `<div class="secondary"><div class="service-notice">${notice}</div></div></div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.startsWith('The town council approved the new bridge'), result.text);
  assert.ok(result.text.includes('the mayor said after the vote.'));
  assert.not.ok(result.text.includes('customer service'), 'the longer block beside the article is left out');
});

const SITE_HEADER = `<header class="site-header"><a href="/">Home</a> <a href="/about">About</a> <a href="/help">Help</a></header>`;
const sentence = (subject: string, n: number) =>
  `${subject} ${n} says, in a few plain words, what this part of the page is about and why it matters to a reader.`;

test('a forum thread keeps every post, short replies too, and says it is a forum', () => {
  const post = (n: number, text: string) =>
    `<article class="message"><div class="message-user"><a href="/u/${n}">member${n}</a> Joined 2024</div><div class="message-body"><p>${text}</p></div></article>`;
  const html =
    `<html><head><title>Best first telescope? | Astronomy Forum</title></head><body>${SITE_HEADER}` +
    `<div class="thread"><h1>Best first telescope?</h1>` +
    post(1, `${sentence('Question', 1)} ${sentence('Question', 2)}`) +
    post(2, sentence('Reply', 2)) +
    post(3, `${sentence('Reply', 3)} ${sentence('Reply', 3)} ${sentence('Reply', 3)}`) +
    post(4, 'Thanks, that answers it: I will start with binoculars first.') +
    `</div><div class="similar"><h3>Similar threads</h3><ul>${[1, 2, 3].map((n) => `<li><a href="/t/${n}">Another thread ${n}</a></li>`).join('')}</ul></div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const text of ['Question 1 says', 'Reply 2 says', 'Reply 3 says', 'I will start with binoculars'])
    assert.ok(result.text.includes(text), `${text}: ${result.text}`);
  assert.not.ok(result.text.includes('Another thread'));
  assert.ok(result.warnings.includes('forum_page'), result.warnings.join());
});

test("a forum thread whose replies are marked as comments keeps them, without their authors' headers; an article's comments stay out", () => {
  const reply = (n: number) =>
    `<article class="reply" itemprop="comment"><header class="reply-info">Posted by <a href="/u/${n}">member${n}</a> on 07/03/24</header>` +
    `<div class="content"><p>${sentence('Reply', n)}</p></div></article>`;
  const html =
    `<html><head><title>Japan on our own or with a tour? | Travel Forum</title></head><body>${SITE_HEADER}` +
    `<div class="main-content"><div class="thread" itemscope itemtype="https://schema.org/DiscussionForumPosting">` +
    `<article class="topic"><h1>Japan on our own or with a tour?</h1><div class="content"><p>${sentence('The question', 1)} ${sentence('The question', 2)}</p></div></article>` +
    `<section id="replies">${[1, 2, 3].map(reply).join('')}</section></div></div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.warnings.includes('forum_page'), result.warnings.join());
  assert.ok(result.text.includes('The question 2 says'), result.text);
  for (let n = 1; n <= 3; n++) assert.ok(result.text.includes(`Reply ${n} says`), `reply ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('Posted by'), result.text);
  const article = cleanHtml(ARTICLE);
  assert.not.ok(article.text.includes('Reader comment'), article.text);
});

test('a product page keeps its description and its specification table, and says it is a product', () => {
  const html =
    `<html><head><title>Trail Runner 2 | Shoe Shop</title><meta property="og:type" content="product"></head><body>${SITE_HEADER}` +
    `<div class="product-page"><h1>Trail Runner 2</h1><div class="price">€ 129</div>` +
    `<div class="description"><p>${sentence('The description', 1)}</p><p>${sentence('The description', 2)}</p></div>` +
    `<h2>Specifications</h2><table class="specs"><tr><th>Weight</th><td>280 g</td></tr><tr><th>Drop</th><td>6 mm</td></tr><tr><th>Upper</th><td>Recycled mesh</td></tr></table></div>` +
    `<div class="more-products"><h3>You may also like</h3>${[1, 2, 3, 4].map((n) => `<div class="card"><h4><a href="/p/${n}">Other shoe ${n}</a></h4><span>€ 99</span></div>`).join('')}</div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(
    result.text.includes('The description 1 says') && result.text.includes('The description 2 says'),
    result.text,
  );
  for (const row of ['Weight | 280 g', 'Drop | 6 mm', 'Upper | Recycled mesh'])
    assert.ok(result.text.includes(row), row);
  assert.not.ok(result.text.includes('Other shoe'));
  assert.ok(result.warnings.includes('product_page'), result.warnings.join());
});

test('a news story with an empty ad slot classed "offers" is an article; a visible price marks a product', () => {
  const paragraphs = Array.from({ length: 5 }, (_, i) => `<p>${sentence('The story', i + 1)}</p>`).join('');
  const page = (extra: string) =>
    `<html><head><title>Fuel shortage | News</title></head><body>${SITE_HEADER}<article><h1>Fuel shortage</h1>${extra}${paragraphs}</article></body></html>`;
  const story = cleanHtml(page('<div class="offers" id="offers"></div>'));
  assertWellFormed(story);
  assert.not.ok(story.warnings.includes('product_page'), story.warnings.join());
  const product = cleanHtml(page('<div class="price">$ 129</div>'));
  assert.ok(product.warnings.includes('product_page'), product.warnings.join());
});

test("a product's short description in one tab keeps the tabs beside it (a list of specifications)", () => {
  // Most specifications are too short to be prose, so the description's tab alone scores
  // best; together the tabs hold an article's worth of prose.
  const specs = [
    ['Key feature', 'light for long treks in the hills'],
    ['Capacity', '40 litres'],
    ['Size', '55 x 30 x 20 cm'],
    ['Weight', '700 g'],
    ['Ventilation', 'yes, it keeps your back cool'],
    ['Straps', 'padded for the shoulders'],
    ['Waterproofing', 'keeps your kit dry in rain'],
    ['Buckles', 'strong'],
  ];
  const description = `${sentence('The backpack', 1)} ${sentence('The backpack', 2)} It comes in three colours and two sizes, for adults and teens.`;
  const product =
    `<html><head><title>Trekking Backpack | Outdoor Shop</title></head><body>${SITE_HEADER}` +
    `<article class="product-details"><div class="section description"><p class="tab-title">Description</p>` +
    `<div class="tab-content"><p>${description}</p></div></div>` +
    `<div class="section technical"><p class="tab-title">Technical information</p>` +
    `<div class="tab-content"><ul>${specs.map(([k, v]) => `<li><strong>${k} :</strong> ${v}</li>`).join('')}</ul></div></div></article>` +
    `<footer><p>${sentence('The shop', 9)}</p></footer></body></html>`;
  const result = cleanHtml(product);
  assertWellFormed(result);
  assert.ok(result.text.includes('The backpack 2 says'), result.text);
  for (const [k, v] of specs) assert.ok(result.text.includes(`${k} : ${v}`), `${k} in ${result.text}`);
  assert.not.ok(result.text.includes('The shop 9'));
});

test("a product's description grows into the blocks of features beside it, each too short to outscore it", () => {
  const features = ['Light frame', 'Dry in the rain', 'Padded straps', 'Strong buckles'].map(
    (name, n) =>
      `<div class="feature"><h3>${name}</h3><p>Feature ${n} keeps the pack comfortable on long treks.</p></div>`,
  );
  const description = [1, 2, 3].map((n) => `<p>${sentence('The backpack', n)}</p>`).join('');
  const html =
    `<html><head><title>Trekking Backpack | Outdoor Shop</title><meta property="og:type" content="product"></head>` +
    `<body>${SITE_HEADER}<div class="page"><div class="productview"><div class="buy"><div>49.99 EUR</div>` +
    `<div>In stock, ships in 2 days</div><div>Free returns for 30 days</div><div>Pay in three parts</div></div>` +
    `<div class="description">${description}</div></div>` +
    `<div class="below"><div class="wrap"><div class="features">${features.join('')}</div></div></div></div>` +
    `<footer><a href="/privacy">Privacy</a></footer></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.is(result.kind, 'product');
  assert.ok(result.text.includes('The backpack 3 says'), result.text);
  for (let n = 0; n < 4; n++) assert.ok(result.text.includes(`Feature ${n} keeps`), `feature ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('Privacy'), result.text);
});

test('an accordion of questions and answers marked as a tab list is content; a tab bar of short labels is not', () => {
  const answers = [1, 2, 3].map(
    (n) =>
      `<div class="accordion-item" role="tab"><h2><button>Question ${n}?</button></h2><div class="panel"><p>${sentence('Answer', n)}</p></div></div>`,
  );
  const html =
    `<html><head><title>Smart thermostats | Energy Co</title></head><body>${SITE_HEADER}<main>` +
    `<div role="tablist" class="tabs"><a href="#a">Overview</a> <a href="#b">Rebates</a> <a href="#c">Questions</a></div>` +
    `<div class="intro">${[1, 2, 3, 4].map((n) => `<p>${sentence('The intro', n)}</p>`).join('')}</div>` +
    `<div class="accordion" role="tablist">${answers.join('')}</div></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('The intro 4 says'), result.text);
  for (let n = 1; n <= 3; n++) assert.ok(result.text.includes(`Answer ${n} says`), `answer ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('Rebates'), result.text);
});

test('a hero block under the headline, thin or not, grows into the sections of the main landmark below it', () => {
  // The longest section scores best and the hero under the headline is chosen over it; the
  // main landmark holds both, so it is the content, however long the hero is.
  const copy = (n: number, sentences: number) =>
    Array.from({ length: sentences }, (_, i) => sentence(`Benefit ${n}.${i + 1}`, n)).join(' ');
  const sections = [8, 1, 1].map(
    (sentences, i) =>
      `<section class="band"><h2>Benefit ${i + 1}</h2><div class="copy"><p>${copy(i + 1, sentences)}</p></div></section>`,
  );
  const heroes = {
    thin: '<p>Cover starts on the first day, for cats and dogs of any age.</p>',
    "an article's worth": [1, 2, 3].map((n) => `<p>${sentence('The cover', n)}</p>`).join(''),
  };
  for (const [length, more] of Object.entries(heroes)) {
    const html =
      `<html><head><title>Pet Insurance | Insurer</title></head><body>${SITE_HEADER}<main>` +
      `<div class="hero"><h1>Pet Insurance</h1><p>Help protect your pet and your budget from unexpected vet bills.</p>` +
      `${more}</div>${sections.join('')}</main><footer><p>${sentence('The insurer', 9)}</p></footer></body></html>`;
    const result = cleanHtml(html);
    assertWellFormed(result);
    assert.ok(result.text.includes('unexpected vet bills'), `${length}: ${result.text}`);
    for (const n of ['1.3', '2.1', '3.1'])
      assert.ok(result.text.includes(`Benefit ${n} `), `${length}: benefit ${n} in ${result.text}`);
    assert.not.ok(result.text.includes('The insurer 9'), length);
    assert.is(result.verdict, 'ok', length);
  }
});

test('the main landmark is the content when the best block is one of its several sections; an article that is most of it stays alone', () => {
  // Sections of a service page, none under a headline, between bands of short figures: the
  // longest section scores best but holds under 70 % of the landmark's prose. The figures are
  // content too, and they keep the landmark's margin of prose below the prose region's bar.
  const section = (n: number, sentences: number) =>
    `<section class="band-${n}"><div class="inner"><h2>Benefit ${n}</h2>` +
    Array.from({ length: sentences }, (_, i) => `<p>${sentence(`Benefit ${n}.${i + 1}`, n)}</p>`).join('') +
    `</div></section>`;
  const figures = `<ul class="figures">${[
    '24/7 US-based agents',
    '$1M identity cover',
    '25 years of service',
    '4.8 stars from members',
    'No fees to cancel',
  ]
    .map((figure) => `<li>${figure}</li>`)
    .join('')}</ul>`;
  const service =
    `<html><head><title>Home insurance | Insurer</title></head><body>${SITE_HEADER}` +
    `<main>${figures}${section(1, 6)}${figures}${section(2, 2)}${figures}${section(3, 2)}</main>` +
    `<footer><p>${sentence('The insurer', 9)}</p></footer></body></html>`;
  const result = cleanHtml(service);
  assertWellFormed(result);
  for (const n of ['1.6', '2.2', '3.1'])
    assert.ok(result.text.includes(`Benefit ${n} `), `benefit ${n} in ${result.text}`);
  assert.ok(result.text.includes('- 25 years of service'), result.text);
  assert.not.ok(result.text.includes('The insurer 9'), result.text);

  // The article holds most of the landmark's prose: the box of other text beside it stays out.
  const article =
    `<html><head><title>Budget approved | The Gazette</title></head><body>${SITE_HEADER}<main>` +
    `<div class="story">${[1, 2, 3, 4, 5, 6].map(paragraph).join('')}</div>` +
    `<div class="box"><p>${sentence('The box', 1)}</p></div></main></body></html>`;
  const story = cleanHtml(article);
  assertWellFormed(story);
  assert.ok(story.text.includes('Paragraph 6 of the report'), story.text);
  assert.not.ok(story.text.includes('The box 1'), story.text);
});

test("a heading or a list item that is all link is a line of its section or list: a card's title and a checklist's step stay, a lone link paragraph does not", () => {
  const cards = [1, 2, 3].map(
    (n) =>
      `<div class="card"><h3><a href="/guide/${n}">Choosing step ${n} of the setup</a></h3><p>${sentence('Card', n)}</p></div>`,
  );
  const steps = ['Book the venue early', 'Order the invitations', 'Choose the photographer'].map(
    (step, n) => `<li><a href="/step/${n}">${step}</a></li>`,
  );
  const html =
    `<html><head><title>Planning | Guide</title></head><body>${SITE_HEADER}<article>` +
    `${paragraph(1)}${paragraph(2)}${cards.join('')}<h2>Checklist</h2>` +
    `<ul><li>Draw up a budget before anything else, and keep to it</li>${steps.join('')}<li>Get a good night of rest before the day itself</li></ul>` +
    `<p><a href="/other">Read the full review of another product</a></p>${paragraph(3)}</article></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (let n = 1; n <= 3; n++) assert.ok(result.text.includes(`### Choosing step ${n} of the setup`), result.text);
  for (const step of ['Book the venue early', 'Order the invitations', 'Choose the photographer'])
    assert.ok(result.text.includes(`- ${step}`), `${step} in ${result.text}`);
  assert.not.ok(result.text.includes('Read the full review'), result.text);
});

test("a page builder's blocks: each heading in its own widget is kept, and a headline over the first of several sections opens them all", () => {
  const widget = (inner: string) =>
    `<div class="elementor-element elementor-widget"><div class="elementor-widget-container">${inner}</div></div>`;
  const section = (n: number, sentences: number) =>
    `<div class="e-con">${widget(`<h2>Part ${n} of the service</h2>`)}` +
    widget(Array.from({ length: sentences }, (_, i) => `<p>${sentence(`Part ${n}.${i + 1}`, n)}</p>`).join('')) +
    `</div>`;
  const html =
    `<html><head><title>Forming a company | Law firm</title></head><body>${SITE_HEADER}<div class="elementor">` +
    `<div class="e-con">${widget('<h1>Forming a company</h1>')}${widget(`<p>${sentence('The firm', 1)}</p><p>${sentence('The firm', 2)}</p>`)}</div>` +
    `${section(1, 6)}${section(2, 3)}${section(3, 3)}</div><footer><p>${sentence('The footer', 9)}</p></footer></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('The firm 2 says'), result.text);
  for (const n of [1, 2, 3])
    assert.ok(result.text.includes(`## Part ${n} of the service`), `part ${n} in ${result.text}`);
  for (const n of ['1.6', '2.1', '3.3']) assert.ok(result.text.includes(`Part ${n} `), `part ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('The footer 9'), result.text);
});

test("a listicle's sections keep their linked headings from their headers; the article's header and the site's stay out", () => {
  const place = (name: string, n: number) =>
    `<section class="listicle-block"><header><h3><a href="https://example.org/${n}"><strong>${name}</strong></a></h3></header>` +
    `<div><p>${sentence(name, n)}</p></div></section>`;
  const html =
    `<html><head><title>Where to cycle | City guide</title></head><body>${SITE_HEADER}<article>` +
    `<header><h1>Where to cycle</h1><p>By A. Writer, 5 min read</p></header><p>${sentence('The guide', 1)}</p>` +
    `${place('Downtown', 1)}${place('The East End', 2)}${place('The Heights', 3)}</article></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const name of ['Downtown', 'The East End', 'The Heights']) {
    assert.ok(result.text.includes(`### ${name}\n\n${name} `), `${name} in ${result.text}`);
  }
  assert.not.ok(result.text.includes('A. Writer'), result.text);
  assert.not.ok(result.text.includes('About'), result.text);
});

test('a table whose first column links each row keeps those cells; a table of links alone is still a link list', () => {
  const row = (n: number) =>
    `<tr><td><a href="/scenario-${n}">Scenario ${n}</a></td><td>Run code ${n} when a file is uploaded.</td></tr>`;
  const links = [1, 2, 3].map((n) => `<tr><td><a href="/other-${n}">Other page ${n}</a></td></tr>`).join('');
  const html =
    `<html><head><title>Functions | Docs</title></head><body>${SITE_HEADER}<main><h1>Functions</h1>` +
    `<p>${sentence('The overview', 1)}</p><table><tr><th>If you want to</th><th>then</th></tr>${[1, 2, 3].map(row).join('')}</table>` +
    `<p>${sentence('The overview', 2)}</p><table>${links}</table></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const n of [1, 2, 3])
    assert.ok(result.text.includes(`Scenario ${n} | Run code ${n} `), `row ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('Other page'), result.text);
});

test('a list whose every item says something beyond its link is content; a list of bare links is not', () => {
  const partners = ['Rebuilding Together', 'Meals on Wheels', 'Habitat for Humanity']
    .map((name, n) => `<li><a href="https://partner-${n}.example/">${name} (Web)</a> (512) 993-823${n}</li>`)
    .join('');
  const related = ['Other story one', 'Other story two', 'Other story three']
    .map((name, n) => `<li><a href="/story-${n}">${name}</a></li>`)
    .join('');
  const html =
    `<html><head><title>Home repairs | City</title></head><body>${SITE_HEADER}<main><h1>Home repairs</h1>` +
    `<p>${sentence('The programme', 1)}</p><p>${sentence('The programme', 2)}</p><ul>${partners}</ul>` +
    `<p>${sentence('The programme', 3)}</p><ul>${related}</ul></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const n of [0, 1, 2])
    assert.ok(result.text.includes(`(Web) (512) 993-823${n}`), `partner ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('Other story'), result.text);
});

test('a link inside a sentence keeps its words whatever its class says; text for screen readers only stays out', () => {
  const html =
    `<html><head><title>Tax guide | Blog</title></head><body>${SITE_HEADER}<main><h1>Tax guide</h1>` +
    `<p>${sentence('The guide', 1)}</p><p>The software is recommended by <a class="external-popup" href="https://example.org/">US News and World Report</a>` +
    `<span class="sr-only"> (opens in a new tab)</span>, and it is easy to use for most households.</p><p>${sentence('The guide', 2)}</p>` +
    `<p><a class="share-popup" href="/share">Share this guide</a></p></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('recommended by US News and World Report'), result.text);
  assert.not.ok(result.text.includes('opens in a new tab'), result.text);
  assert.not.ok(result.text.includes('Share this guide'), result.text);
});

test("a shop's category text keeps the grid of priced products below it; an article keeps out a smaller shop carousel", () => {
  const card = (n: number) =>
    `<div class="card"><h2><a href="/p/${n}">Terracotta pot number ${n}, with saucer</a></h2><span>SKU: P${n}00</span><span>$${n}9.50</span></div>`;
  const grid = (count: number) =>
    `<div class="grid">${Array.from({ length: count }, (_, i) => card(i + 1)).join('')}</div>`;
  const category =
    `<html><head><title>Indoor pots | Garden shop</title></head><body>${SITE_HEADER}<div class="description"><p>${sentence('The category', 1)}</p>` +
    `<p>${sentence('The category', 2)}</p><p>${sentence('The category', 3)}</p></div>${grid(12)}</body></html>`;
  const shop = cleanHtml(category);
  assertWellFormed(shop);
  assert.ok(shop.text.includes('The category 3 says'), shop.text);
  for (const n of [1, 12])
    assert.ok(shop.text.includes(`Terracotta pot number ${n}, with saucer`), `card ${n} in ${shop.text}`);
  assert.ok(shop.warnings.includes('listing_page'), shop.warnings.join());

  const paragraphs = Array.from({ length: 12 }, (_, i) => `<p>${sentence('The story', i + 1)}</p>`).join('');
  const story = cleanHtml(
    `<html><head><title>A garden in winter | Garden news</title></head><body>${SITE_HEADER}<article>${paragraphs}</article>${grid(6)}</body></html>`,
  );
  assertWellFormed(story);
  assert.ok(story.text.includes('The story 12 says'), story.text);
  assert.not.ok(story.text.includes('Terracotta pot'), story.text);
});

test("an accordion's answers hidden until their question is clicked are content; other hidden text is not", () => {
  const faq = [1, 2, 3]
    .map(
      (n) =>
        `<div class="faq-item"><div class="faq-question">Question ${n} about the backpack?</div>` +
        `<div class="faq-answer" style="display: none;">Answer ${n}: yes, it is built to last on long trails.</div></div>`,
    )
    .join('');
  const html =
    `<html><head><title>Trekking backpack | Shop</title></head><body>${SITE_HEADER}<main><h1>Trekking backpack</h1>` +
    `<p>${sentence('The description', 1)}</p><p>${sentence('The description', 2)}</p><h2>Questions</h2>${faq}` +
    `<div class="promo-banner-text" style="display:none">${sentence('The hidden promotion', 1)}</div></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const n of [1, 2, 3]) assert.ok(result.text.includes(`Answer ${n}: yes`), `answer ${n} in ${result.text}`);
  assert.not.ok(result.text.includes('hidden promotion'), result.text);
});

test('a sidebar stays out even when its widgets hold more prose than the page, whose content is a table', () => {
  const rows = Array.from(
    { length: 12 },
    (_, i) => `<tr><td>${i + 1}</td><td>Driver number ${i + 1}</td><td>${4000 - i * 90}</td></tr>`,
  );
  const widgets = [1, 2, 3, 4]
    .map((n) => `<div class="module"><p>${sentence('The sidebar widget', n)}</p></div>`)
    .join('');
  const html =
    `<html><head><title>Standings | Racing</title></head><body>${SITE_HEADER}<div class="container">` +
    `<div class="story"><table>${rows.join('')}</table><p>The standings after the last race of the season, updated.</p></div>` +
    `<aside class="sidebar">${widgets}</aside></div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('1 | Driver number 1 | 4000'), result.text);
  assert.ok(result.text.includes('12 | Driver number 12 | 3010'), result.text);
  assert.not.ok(result.text.includes('sidebar widget'), result.text);
});

test('text that was UTF-8 misread as Latin-1 before the page was served is read as written; real Latin-1 text is left alone', () => {
  const misread = (text: string) => String.fromCharCode(...new TextEncoder().encode(text));
  const page = (body: string) =>
    `<html><head><title>Notes | Blog</title></head><body>${SITE_HEADER}<article><p>${sentence('The note', 1)}</p>${body}</article></body></html>`;
  const repaired = cleanHtml(
    page(`<p>${misread('It’s the organization’s own server — in Zürich, not São Paulo.')}</p>`),
  );
  assertWellFormed(repaired);
  assert.ok(repaired.text.includes('It’s the organization’s own server — in Zürich, not São Paulo.'), repaired.text);
  const french = cleanHtml(page('<p>Le thème de l’année est «ÉTÉ», écrit en capitales sur toutes les affiches.</p>'));
  assert.ok(french.text.includes('«ÉTÉ», écrit en capitales'), french.text);
});

test("an author's box under an article stays out, even with a sentence of prose; the article's sentence naming its author stays in", () => {
  const paragraphs = Array.from({ length: 6 }, (_, i) => `<p>${sentence('The review', i + 1)}</p>`).join('');
  const html =
    `<html><head><title>Espresso machines | Coffee corner</title></head><body>${SITE_HEADER}<article><div class="entry">${paragraphs}` +
    `<p>Thanks for reading, and happy coffee drinking: the author wrote this for beginners.</p>` +
    `<section class="about-author"><h2>About the Author: Tom</h2><div class="description">Engineer by day, video maker and content creator part-time, with two degrees in electrical engineering.</div></section>` +
    `</div></article></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('The review 6 says'), result.text);
  assert.ok(result.text.includes('the author wrote this for beginners'), result.text);
  assert.not.ok(result.text.includes('Engineer by day'), result.text);
  assert.not.ok(result.text.includes('About the Author'), result.text);
});

test("a list item's text keeps its place whatever class its wrapper has; a metadata line outside a list stays out", () => {
  const item = (text: string) => `<li class="pros-item"><div class="lfh_meta">${text}</div></li>`;
  const paragraphs = Array.from({ length: 5 }, (_, i) => `<p>${sentence('The review', i + 1)}</p>`).join('');
  const html =
    `<html><head><title>Vertical mouse review | Gear</title></head><body>${SITE_HEADER}<article><div class="entry-meta">Posted by Sam on 3 May</div>` +
    `${paragraphs}<h2>Pros</h2><ul>${item('Comfortable vertical shape')}${item('Quiet click panels')}${item('Six months on one battery')}</ul></article></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const pro of ['Comfortable vertical shape', 'Quiet click panels', 'Six months on one battery'])
    assert.ok(result.text.includes(`- ${pro}`), `${pro} in ${result.text}`);
  assert.not.ok(result.text.includes('Posted by Sam'), result.text);
});

test('a documentation page keeps its headings and code blocks, and says it is documentation', () => {
  const html =
    `<html><head><title>Configuration | Tool docs</title></head><body>${SITE_HEADER}` +
    `<nav class="docs-nav"><ul>${[1, 2, 3, 4].map((n) => `<li><a href="/docs/${n}">Chapter ${n}</a></li>`).join('')}</ul></nav>` +
    `<main><h1>Configuration</h1><p>${sentence('The guide', 1)}</p><h2>Install</h2><pre><code>npm install tool --save-exact</code></pre>` +
    `<p>${sentence('The guide', 2)}</p><h2>Run</h2><pre><code>tool run --config tool.json\ntool check</code></pre><p>${sentence('The guide', 3)}</p></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  const blocks = result.text.split('\n\n');
  for (const block of [
    '## Install',
    '## Run',
    'npm install tool --save-exact',
    'tool run --config tool.json\ntool check',
  ])
    assert.ok(blocks.includes(block), `${block}: ${result.text}`);
  assert.not.ok(result.text.includes('Chapter 2'));
  assert.ok(result.warnings.includes('documentation_page'), result.warnings.join());
});

test('a listing keeps its items, and says it is a listing', () => {
  const items = Array.from(
    { length: 8 },
    (_, n) => `<li class="result"><a href="/book/${n}">Catalogue of hardware, volume ${n}</a> (19${n}0)</li>`,
  ).join('');
  const html =
    `<html><head><title>Browse: Hardware catalogues</title></head><body>${SITE_HEADER}` +
    `<main><h1>Hardware catalogues</h1><p>Books on this subject, oldest first.</p><ul class="results">${items}</ul></main>` +
    `<footer><a href="/terms">Terms</a></footer></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (let n = 0; n < 8; n++)
    assert.ok(result.text.includes(`Catalogue of hardware, volume ${n} (19${n}0)`), result.text);
  assert.not.ok(result.text.includes('Terms'));
  assert.ok(result.warnings.includes('listing_page'), result.warnings.join());
});

test("a catalogue whose only prose is one card's sale note keeps every card (badge, name, price), and says it is a listing", () => {
  // The note is the page's one run of prose, so it alone was the main content: the other cards were lost.
  const cards = Array.from({ length: 6 }, (_, n) => {
    const price = n === 3 ? 'Price reduced from $29.95 to $23.95 until Sunday' : `$${n + 20}.95`;
    return (
      `<div class="col-6"><div class="tile"><a href="/p/${n}"><img alt=""></a><span class="badge">New</span>` +
      `<div class="name"><a href="/p/${n}">Helmet vent light model ${n}</a></div><div class="cost">${price}</div></div></div>`
    );
  }).join('');
  const html =
    `<html><head><title>Lights | Cycle shop</title></head><body>${SITE_HEADER}` +
    `<div class="page"><h2>Lights</h2><div>6 results</div><div class="row grid">${cards}</div></div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (let n = 0; n < 6; n++) assert.ok(result.text.includes(`Helmet vent light model ${n}`), result.text);
  for (const price of ['$20.95', '$25.95', 'Price reduced from $29.95'])
    assert.ok(result.text.includes(price), result.text);
  assert.ok(result.text.indexOf('model 0') < result.text.indexOf('model 5'), 'the items stay in page order');
  assert.not.ok(result.text.includes('About'), 'the site header stays out');
  assert.is(result.kind, 'listing');
  assert.ok(result.warnings.includes('listing_page'), result.warnings.join());
  // Only a page without an article gives way to its items: beside a real article the grid stays out.
  const withArticle = cleanHtml(
    html.replace('<h2>Lights</h2>', `<article>${paragraph(1)}${paragraph(2)}${paragraph(3)}</article>`),
  );
  assert.is(withArticle.kind, 'article');
  assert.not.ok(withArticle.text.includes('Helmet vent light'), withArticle.text);
});

test("a card's name clipped by overflow-hidden, or a field whose label is hidden, is shown text, not hidden furniture", () => {
  const cards = [
    'Cloud Paint Duo in four shades',
    'Balm Trio Set for the winter',
    'Hand Cream Large with shea butter',
    'Body Spritz Mini for travelling',
    'Candle Gift Box of three scents',
  ].map(
    (name, n) =>
      `<div class="card flex"><div class="font-bold line-clamp-2 overflow-hidden">${name}</div><div class="price">€${n + 20}</div></div>`,
  );
  const html =
    `<html><head><title>Gift sets | Shop</title></head><body>${SITE_HEADER}<main><h1>Gift sets</h1>` +
    `<p>Our holiday gift sets, while stocks last.</p><div class="grid">${cards.join('')}</div></main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const name of ['Cloud Paint Duo in four shades', 'Candle Gift Box of three scents'])
    assert.ok(result.text.includes(name), `${name} in ${result.text}`);
  assert.ok(result.text.includes('€24'), result.text);

  const games = ['Chit Chat', 'Betrayal of the Second Era', 'Fate of the Fellowship'].map(
    (game, n) =>
      `<div class="list-item"><h2>${game}</h2><div class="field field--label-hidden">Published by Studio ${n}</div>` +
      `<p>${sentence(`Game ${n}`, n)}</p></div>`,
  );
  const list = cleanHtml(
    `<html><head><title>Best games | Magazine</title></head><body>${SITE_HEADER}<article>${paragraph(1)}${games.join('')}</article></body></html>`,
  );
  assertWellFormed(list);
  for (let n = 0; n < 3; n++) assert.ok(list.text.includes(`Published by Studio ${n}`), list.text);
});

test("a figure holding a table is content, a figure's caption is not; a code block keeps its highlighter's comment and tag tokens", () => {
  const html =
    `<html><head><title>Payroll tools | Review</title></head><body>${SITE_HEADER}<article>${paragraph(1)}` +
    `<figure class="wp-block-table"><table><tr><th>Tool</th><th>Price</th></tr><tr><td>Payroll One</td><td>$4 a user</td></tr></table></figure>` +
    `${paragraph(2)}<figure><img src="a.png"><figcaption>Photo credit: a caption under the picture</figcaption></figure>` +
    `<pre><code><span class="token comment">// start the server</span>\n<span class="token tag">&lt;server port="80"&gt;</span></code></pre>` +
    `${paragraph(3)}</article></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('Payroll One | $4 a user'), result.text);
  assert.not.ok(result.text.includes('Photo credit'), result.text);
  assert.ok(result.text.includes('// start the server\n<server port="80">'), result.text);
});

test("Tailwind's hidden sm:block is shown from a small screen's width on; hidden alone is hidden", () => {
  const html =
    `<html><head><title>Home loans | Bank</title></head><body>${SITE_HEADER}<main>${paragraph(1)}${paragraph(2)}` +
    `<div class="hidden sm:block max-w-6xl"><h2>Rates this week</h2><ul><li>Fixed 5 years: 3.9 %</li><li>Variable: 4.2 %</li></ul></div>` +
    `<div class="hidden"><ul><li>Menu for phones</li><li>Close the menu</li></ul></div>${paragraph(3)}</main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('Fixed 5 years: 3.9 %'), result.text);
  assert.not.ok(result.text.includes('Menu for phones'), result.text);
});

test('a page with no article whose main text stays thin is read whole, less its furniture: a ranking form of short cells', () => {
  const areas = ['Artificial intelligence', 'Computer vision', 'Machine learning', 'Databases', 'Operating systems'];
  const rows = areas.map((area, n) => `<tr><td><input type="checkbox"></td><td>${area}</td><td>${n + 1}</td></tr>`);
  const html =
    `<html><head><title>Rankings</title></head><body>${SITE_HEADER}<form class="rankform"><div class="page-header">` +
    `<h1>Rankings of institutions</h1><div class="panel intro"><div class="panel-heading">` +
    `<p>Pick the areas to rank institutions by, from any year, and see where each one stands.</p></div></div>` +
    `<div class="areas"><table>${rows.join('')}${rows.join('')}</table></div></div></form>` +
    `<footer><a href="/privacy">Privacy</a> <a href="/terms">Terms of use</a></footer></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.ok(result.text.includes('Pick the areas'), result.text);
  for (const area of areas) assert.ok(result.text.includes(area), `${area} in ${result.text}`);
  assert.not.ok(result.text.includes('Terms of use'), result.text);
  assert.not.ok(result.text.includes('About'), result.text);
});

test('a short news item stays alone: the teasers of other stories around it are not the rest of a page with no article', () => {
  const teasers = [1, 2, 3, 4].map(
    (n) =>
      `<div class="teaser"><h3><a href="/s/${n}">Another story ${n} from the city desk</a></h3><p>Teaser ${n}: a short summary of that other story.</p></div>`,
  );
  const html =
    `<html><head><title>Bridge reopens | The Gazette</title></head><body>${SITE_HEADER}<div class="page">` +
    `<div class="story"><h1>Bridge reopens</h1><p>${sentence('The story', 1)}</p></div>` +
    `<div class="more">${teasers.join('')}</div></div></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.is(result.text, sentence('The story', 1));
  assert.is(result.verdict, 'thin');
});

test('tab panels hidden until their tab is clicked are content; other hidden elements are not', () => {
  const panels = ['Windows', 'macOS', 'Linux'].map(
    (platform, n) =>
      `<section role="tabpanel" id="tab-${n}"${n === 0 ? '' : ' hidden="hidden" aria-hidden="true"'}>` +
      `<p>${sentence(`Install on ${platform}`, n)}</p><pre><code>tool install --${platform.toLowerCase()}</code></pre></section>`,
  );
  const html =
    `<html><head><title>Install | Tool docs</title></head><body>${SITE_HEADER}<main><h1>Install</h1>${paragraph(1)}` +
    `<div role="tablist"><button role="tab">Windows</button><button role="tab">macOS</button><button role="tab">Linux</button></div>` +
    `${panels.join('')}<div hidden><p>${sentence('The hidden survey', 1)}</p></div>${paragraph(2)}</main></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (const platform of ['Windows', 'macOS', 'Linux']) {
    assert.ok(result.text.includes(`Install on ${platform}`), `${platform} in ${result.text}`);
    assert.ok(result.text.includes(`tool install --${platform.toLowerCase()}`), result.text);
  }
  assert.not.ok(result.text.includes('hidden survey'), result.text);
});

test('a page behind a loading curtain (all of it visibility: hidden until scripts run) is read as shown; a hidden part of a shown page stays out', () => {
  const article = `<article><h1>Tutorial</h1>${paragraph(1)}${paragraph(2)}${paragraph(3)}</article>`;
  const curtained = cleanHtml(
    `<html><body><div style="visibility: hidden; min-height: 100vh">${SITE_HEADER}${article}</div></body></html>`,
  );
  assertWellFormed(curtained);
  assert.is(curtained.verdict, 'ok');
  assert.ok(curtained.text.includes('Paragraph 3 of the report'), curtained.text);
  const shown = cleanHtml(`<html><body>${article}<div style="visibility:hidden">${paragraph(9)}</div></body></html>`);
  assert.ok(shown.text.includes('Paragraph 1 of the report'), shown.text);
  assert.not.ok(shown.text.includes('Paragraph 9'), shown.text);
});

test('link lists that are most of the main block (a page of references) are kept; a short one inside an article is not', () => {
  const references = (section: string) =>
    Array.from(
      { length: 4 },
      (_, n) =>
        `<li><a href="/r/${section}${n}">${section}: tuning the server for heavy loads, part ${n}</a> by A. Author</li>`,
    ).join('');
  const page = cleanHtml(
    `<html><head><title>Performance</title></head><body>${SITE_HEADER}<div class="wiki-content"><h1>Performance</h1>` +
      `<p>Performance courses are offered by several companies; see the events page.</p>` +
      `<h2>Setup</h2><ul>${references('Setup')}</ul><h2>Hardware</h2><ul>${references('Hardware')}</ul></div></body></html>`,
  );
  assertWellFormed(page);
  assert.is(page.kind, 'article');
  for (const section of ['Setup', 'Hardware'])
    for (let n = 0; n < 4; n++)
      assert.ok(page.text.includes(`${section}: tuning the server for heavy loads, part ${n}`), page.text);
  const related = `<ul><li><a href="/x">Another story</a></li><li><a href="/y">Yet another story</a></li></ul>`;
  const article = cleanHtml(
    `<html><body><article>${paragraph(1)}${paragraph(2)}${related}${paragraph(3)}</article></body></html>`,
  );
  assert.ok(article.text.includes('Paragraph 3 of the report'), article.text);
  assert.not.ok(article.text.includes('Another story'), article.text);
});

test('a service page of short blocks keeps them over the longer legal notes of its footer and disclaimers', () => {
  const legal = Array.from(
    { length: 6 },
    (_, n) =>
      `<p>Note ${n}: savings are averages over six-month terms, not available in every state, and subject to the terms of the policy as issued.</p>`,
  ).join('');
  const offers = ['Cover for vet bills', 'Routine care add-on', 'Bundle and save'].map(
    (name, n) =>
      `<section><h2>${name}</h2><p>Offer ${n} helps with unexpected bills when your pet needs care.</p></section>`,
  );
  const html =
    `<html><body>${SITE_HEADER}<main><h1>Pet insurance</h1>${offers.join('')}` +
    `<div class="legal-disclaimer"><p>Rates are provided and serviced by third parties; terms and conditions apply to every policy.</p></div></main>` +
    `<footer><div class="disclosures">${legal}</div></footer></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  for (let n = 0; n < 3; n++) assert.ok(result.text.includes(`Offer ${n} helps`), result.text);
  assert.not.ok(result.text.includes('Note 0: savings'), result.text);
  assert.not.ok(result.text.includes('serviced by third parties'), result.text);
});

test('the thin threshold weighs text, not characters: a short news item in Chinese, Japanese or Korean is ok, a one-line note thin', () => {
  // 80 to 110 characters of each: a full news item in these scripts, a third of the letters
  // an English one needs. Thai writes no spaces either, but in letters: it is counted as such.
  const items: Record<string, { article: string[]; note: string }> = {
    chinese: {
      article: [
        '市政府周一宣布，明年将投入更多资金用于公共交通和学校建设，以缓解城市人口快速增长带来的压力。',
        '官员表示，新的地铁线路预计在三年内完工，沿线将新建多所小学和社区医院，方便居民日常出行和就医。',
      ],
      note: '编辑今天上午发布了简短说明。',
    },
    japanese: {
      article: [
        '東京都は月曜日、来年度から公共交通と学校の整備に重点的に予算を配分すると発表した。',
        '担当者によると、新しい地下鉄路線は三年以内に完成する見込みで、沿線には小学校や病院も新設される。',
      ],
      note: '編集部から短いお知らせです。',
    },
    korean: {
      article: [
        '서울시는 월요일 내년부터 대중교통과 학교 건설에 더 많은 예산을 투입하겠다고 발표했다.',
        '관계자는 새 지하철 노선이 삼 년 안에 완공될 예정이며 노선을 따라 초등학교와 병원이 새로 들어선다고 밝혔다.',
        '시민들은 대체로 환영하는 분위기다.',
      ],
      note: '편집부의 짧은 공지입니다.',
    },
    thai: {
      article: [
        'รัฐบาลประกาศเมื่อวันจันทร์ว่าจะเพิ่มงบประมาณสำหรับระบบขนส่งสาธารณะและการสร้างโรงเรียนใหม่ในปีหน้าเพื่อรองรับจำนวนประชากรที่เพิ่มขึ้นอย่างรวดเร็ว',
        'เจ้าหน้าที่กล่าวว่ารถไฟฟ้าสายใหม่จะแล้วเสร็จภายในสามปีและจะมีการสร้างโรงเรียนประถมและโรงพยาบาลชุมชนตามแนวเส้นทาง',
      ],
      note: 'ประกาศสั้นจากบรรณาธิการวันนี้',
    },
  };
  for (const [script, { article, note }] of Object.entries(items)) {
    const page = (body: string) =>
      `<html><body><nav><a href="/">Home</a></nav><article>${body}</article></body></html>`;
    const ok = cleanHtml(page(article.map((p) => `<p>${p}</p>`).join('')));
    assertWellFormed(ok);
    assert.is(ok.verdict, 'ok', script);
    assert.is(ok.text, article.join('\n\n'), script);
    const thin = cleanHtml(page(`<p>${note}</p>`));
    assert.is(thin.verdict, 'thin', script);
    assert.is(thin.text, note, script);
  }
});

test('a stray <![CDATA[ outside SVG and MathML is a bogus comment ending at the next ">", as browsers read it, not a section that hides the page', () => {
  const html =
    `<html><head><title>Wearables | Forum</title></head><body><![CDATA[ <div class="thread">` +
    `<article class="message"><p>${sentence('The question', 1)}</p></article>` +
    `<article class="message"><p>${sentence('The reply', 2)}</p></article></div>` +
    `<svg><style><![CDATA[ .a > .b { fill: red } ]]></style><text>chart label</text></svg></body></html>`;
  const result = cleanHtml(html);
  assertWellFormed(result);
  assert.is(result.verdict, 'thin');
  assert.ok(result.text.includes('The question 1 says') && result.text.includes('The reply 2 says'), result.text);
  assert.not.ok(/CDATA|fill|chart label/.test(result.text), result.text);
});

test('verdicts: ok, thin, empty, not_html', () => {
  assert.is(cleanHtml(ARTICLE).verdict, 'ok');
  const thin = cleanHtml(
    '<html><body><article><p>Short note posted by the editor this morning.</p></article></body></html>',
  );
  assert.is(thin.verdict, 'thin');
  assert.is(thin.text, 'Short note posted by the editor this morning.');
  for (const empty of [
    '<html><body><script>var a = 1;</script><div hidden>gone</div></body></html>',
    '<p>   </p>',
    '<!doctype html>',
  ]) {
    const result = cleanHtml(empty);
    assert.is(result.verdict, 'empty', empty);
    assertWellFormed(result);
  }
  for (const notHtml of ['just a sentence of plain text, no markup at all', '', '{"json": true}', 'a < b and c > d']) {
    assert.is(cleanHtml(notHtml).verdict, 'not_html', notHtml);
  }
  const png = new Uint8Array([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0x3c, 0x70, 0x3e, 1, 2, 3, 0,
    0,
  ]);
  assert.is(cleanHtml(png).verdict, 'not_html');
});

test('warnings: no_main_block and mostly_links on a page of links; nesting_flattened on deep markup', () => {
  const hub = `<html><body>${Array.from({ length: 40 }, (_, i) => `<div><a href="/p${i}">Section ${i}</a></div>`).join('')}<p>Menu</p></body></html>`;
  const result = cleanHtml(hub);
  assertWellFormed(result);
  assert.is(result.verdict, 'thin');
  assert.equal(result.warnings, ['no_main_block', 'mostly_links', 'listing_page']);
  assert.ok(result.text.includes('Section 39'), 'with no main block, the visible text is returned');

  const depth = 100_000;
  const deep = cleanHtml(
    `<div>${'<div><span class="s">'.repeat(depth)}${paragraph(1).repeat(3)}${'</span></div>'.repeat(depth)}</div>`,
  );
  assertWellFormed(deep);
  assert.ok(deep.warnings.includes('nesting_flattened'));
  assert.ok(deep.text.includes('Paragraph 1 of the report'));
});

test('warnings: truncated past the size cap, for strings and for bytes', () => {
  const big = `<article>${paragraph(1)}<p>${'word '.repeat(MAX_INPUT / 5)}</p><p>TAIL-MARKER</p></article>`;
  const fromString = cleanHtml(big);
  assert.ok(fromString.warnings.includes('truncated'));
  assert.not.ok(fromString.text.includes('TAIL-MARKER'));
  assert.ok(fromString.text.startsWith('Paragraph 1'));
  const fromBytes = cleanHtml(Buffer.from(`<meta charset="utf-8">${big}`));
  assert.equal(fromBytes.warnings, ['truncated']);
  assert.not.ok(cleanHtml(ARTICLE).warnings.includes('truncated'));
});

test('charset: BOM, meta charset and http-equiv are honoured for bytes; guesses are flagged', () => {
  const body = (s: string) => `<article><p>${s} ${'and the rest of a long enough sentence. '.repeat(8)}</p></article>`;
  const latin = Buffer.concat([
    Buffer.from('<meta charset="windows-1252">'),
    Buffer.from(body('Caf_')).map((b) => (b === 0x5f ? 0xe9 : b)),
  ]);
  const decoded = cleanHtml(latin);
  assert.ok(decoded.text.startsWith('Café and'), decoded.text);
  assert.equal(decoded.warnings, []);

  const cyrillic = Buffer.concat([
    Buffer.from('<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'),
    Buffer.from(body('#')).map((b) => b),
  ]);
  const privet = Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]);
  const withWord = Buffer.concat([
    cyrillic.subarray(0, cyrillic.indexOf('#')),
    privet,
    cyrillic.subarray(cyrillic.indexOf('#') + 1),
  ]);
  assert.ok(cleanHtml(withWord).text.startsWith('Привет and'));

  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(body('Grüße'), 'utf16le')]);
  assert.ok(cleanHtml(utf16).text.startsWith('Grüße and'));
  assert.equal(cleanHtml(utf16).warnings, []);
  const bom8 = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body('日本語'))]);
  assert.ok(cleanHtml(bom8).text.startsWith('日本語 and'));

  const undeclaredUtf8 = cleanHtml(Buffer.from(body('Ελληνικά')));
  assert.ok(undeclaredUtf8.text.startsWith('Ελληνικά and'));
  assert.equal(undeclaredUtf8.warnings, ['charset_guessed']);
  const undeclaredLatin = cleanHtml(Buffer.from(body('Caf_')).map((b) => (b === 0x5f ? 0xe9 : b)));
  assert.ok(undeclaredLatin.text.startsWith('Café and'), 'invalid UTF-8 falls back to windows-1252');
  assert.equal(undeclaredLatin.warnings, ['charset_guessed']);
  const unknown = cleanHtml(Buffer.from(`<meta charset="x-martian">${body('Plain')}`));
  assert.equal(unknown.warnings, ['charset_unknown']);
  assert.ok(unknown.text.startsWith('Plain and'));
});

test('htmlToText keeps a whole document: every block, no main-block selection', () => {
  const text = htmlToText(
    `<h1>Guide</h1><nav>Contents</nav><p>Short.</p><table><tr><td><p>Mon</p></td><td><p>Setup</p></td></tr></table>`,
  );
  assert.is(text, '# Guide\n\nContents\n\nShort.\n\nMon | Setup');
});

// ---- properties ------------------------------------------------------------------------------

const TAGS = [
  'div',
  'p',
  'span',
  'a',
  'ul',
  'li',
  'table',
  'tr',
  'td',
  'h2',
  'article',
  'nav',
  'section',
  'br',
  'b',
  'pre',
  'blockquote',
];
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'ünïcode', '中文', 'слово', 'كلمة', '&amp;', '&lt;', '&#x263A;'];
const SECRET = 'SECRETWORD';
const markup: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 12 }).map((w) => ` ${w.join(' ')} `),
    fc
      .tuple(
        fc.constantFrom(...TAGS),
        fc.constantFrom('', ' class="content"', ' class="share"', ' id="comments"', ' role="navigation"'),
        fc.array(tie('node'), { maxLength: 5 }),
        fc.boolean(),
      )
      .map(([tag, attr, kids, closed]) => `<${tag}${attr}>${kids.join('')}${closed ? `</${tag}>` : ''}`),
    fc.constantFrom(
      `<script>${SECRET}</script>`,
      `<style>${SECRET}</style>`,
      `<div hidden>${SECRET}</div>`,
      `<p style="display:none">${SECRET}</p>`,
      '</div>',
      '</p>',
      '<!-- c -->',
    ),
  ),
})).node;

test('property: never throws on arbitrary strings and bytes, and the output is always well formed', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 2000 }), (s) => assertWellFormed(cleanHtml(s))),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 2000 }), (b) => assertWellFormed(cleanHtml(b))),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (s) =>
      assertWellFormed(cleanHtml(`<p>${s}</p><div class="${s}">${s}</div>`)),
    ),
    { numRuns: 200 },
  );
});

test('property: on random markup, output words come from the visible text only; dropped content never leaks', () => {
  const visible = new Set([
    'alpha',
    'beta',
    'gamma',
    'delta',
    'ünïcode',
    '中文',
    'слово',
    'كلمة',
    '&',
    '<',
    '☺',
    '#',
    '##',
    '-',
    '|',
  ]);
  fc.assert(
    fc.property(fc.array(markup, { minLength: 1, maxLength: 6 }), (parts) => {
      const html = `<html><body>${parts.join('')}</body></html>`;
      const result = cleanHtml(html);
      assertWellFormed(result);
      assert.not.ok(result.text.includes(SECRET), html);
      for (const word of result.text.split(/\s+/)) if (word !== '') assert.ok(visible.has(word), `${word} in ${html}`);
    }),
    { numRuns: 400 },
  );
});

test('property: the same markup as a string or as UTF-8 bytes gives the same text', () => {
  fc.assert(
    fc.property(fc.array(markup, { minLength: 1, maxLength: 6 }), (parts) => {
      const html = `<meta charset="utf-8">${parts.join('')}`;
      assert.is(cleanHtml(Buffer.from(html)).text, cleanHtml(html).text);
    }),
    { numRuns: 200 },
  );
});

test('property: any nesting depth of any tags, closed or not, never throws', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...TAGS, 'table', 'svg', 'select', 'font'),
      fc.integer({ min: 1, max: 20_000 }),
      fc.boolean(),
      (tag, depth, closed) => {
        const html = `${`<${tag}>`.repeat(depth)}alpha beta${closed ? `</${tag}>`.repeat(depth) : ''}`;
        assertWellFormed(cleanHtml(html));
      },
    ),
    { numRuns: 40 },
  );
});

test.run();
