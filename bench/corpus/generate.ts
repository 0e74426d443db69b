// The synthetic corpus of the throughput benchmarks (`ingest bench corpus`). Document i is a
// function of (seed, i) alone, so the corpus streams: one document is built, rendered and
// written at a time, whatever N is, and any document can be rebuilt on its own.
//
// What a document holds, so every stage has work: headings and paragraphs of plausible
// length; a Q&A section ("Q:" / "A:" lines, now and then a blank answer for the blank-form
// gate); named people and organisations drawn from one pool with a skewed popularity, so the
// same names recur across many documents (stage 5 has mentions to resolve); tables (a sheet
// per table in workbooks, a table in DOCX).
//
// About a quarter of the name occurrences are written as an alias of the true name (a legal
// suffix, Corp for Company, a one-letter typo), and each document lists what it placed
// (`entities`): the ground truth that entity resolution is scored against offline.
//
// With `repeatedQa` (the Q&A dedup benchmark, bench/qa-dedup.ts), a document also carries a few
// Q&A pairs drawn from a shared library of FAQ entries ("families"), after its own: the same
// entry asked again word for word, with the question reworded, or with its answer changed. Each
// such pair says which entry and which answer it is (`repeat`): the ground truth. Without the
// option every document is exactly what it was; with it, only these pairs are added (their own
// random stream), so every other part of the document stays the same.

import { IngestError } from '../../lib/errors.ts';

export type CorpusType = 'md' | 'pdf' | 'docx' | 'xlsx' | 'html';
export const CORPUS_TYPES: readonly CorpusType[] = ['md', 'pdf', 'docx', 'xlsx', 'html'];
export const DEFAULT_MIX = 'md:70,pdf:10,docx:10,xlsx:5,html:5';

export interface Section {
  heading: string;
  paragraphs: string[];
}

export interface Table {
  name: string;
  header: string[];
  rows: (string | number)[][];
}

export interface EntityOccurrence {
  /** The name as written in the document: the canonical name or an alias of it. */
  surface: string;
  /** The canonical name of the true entity, e.g. "Northwind Traders" or "Ada Lovelace". */
  entity: string;
  type: 'organization' | 'person';
}

export interface CorpusDocument {
  index: number;
  type: CorpusType;
  title: string;
  sections: Section[];
  qa: QaPair[];
  tables: Table[];
  /** Every person and organisation placed in the title, text, Q&A and tables, in the order drawn. */
  entities: EntityOccurrence[];
}

export interface QaPair {
  question: string;
  answer: string | null;
  /** A pair from the shared FAQ library (repeatedQa): its entry, its question's wording, its answer. */
  repeat?: { family: number; wording: number; answer: number };
}

export class CorpusMixError extends IngestError {
  constructor(message: string) {
    super('corpus_mix_invalid', message);
  }
}

/** Parses "md:70,pdf:10,..." into whole-number weights per type; anything else is a named error. */
export function parseMix(text: string): Map<CorpusType, number> {
  const mix = new Map<CorpusType, number>();
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const [type, weight = ''] = part.split(':');
    if (!CORPUS_TYPES.includes(type as CorpusType))
      throw new CorpusMixError(`unknown document type "${type}" in --mix (known: ${CORPUS_TYPES.join(', ')})`);
    if (!/^\d{1,6}$/.test(weight.trim()))
      throw new CorpusMixError(`--mix weight of ${type} must be a whole number from 0 to 999999`);
    mix.set(type as CorpusType, (mix.get(type as CorpusType) ?? 0) + Number(weight));
  }
  if ([...mix.values()].every((w) => w === 0))
    throw new CorpusMixError('--mix needs at least one type with a weight above 0');
  return mix;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * One period of the type sequence: as many slots as the weights sum to (over their common
 * divisor), interleaved evenly by smooth weighted round-robin. Document i takes slot
 * i mod period, so every period holds each type exactly in proportion.
 */
export function mixPattern(mix: ReadonlyMap<CorpusType, number>): CorpusType[] {
  const divisor = [...mix.values()].reduce(gcd);
  const weights = [...mix].filter(([, w]) => w > 0).map(([type, w]) => ({ type, weight: w / divisor, current: 0 }));
  const period = weights.reduce((n, w) => n + w.weight, 0);
  const pattern: CorpusType[] = [];
  for (let slot = 0; slot < period; slot++) {
    for (const w of weights) w.current += w.weight;
    const chosen = weights.reduce((a, b) => (b.current > a.current ? b : a));
    chosen.current -= period;
    pattern.push(chosen.type);
  }
  return pattern;
}

/** mulberry32 seeded by (seed, index): each document has its own independent stream. */
export function documentRandom(seed: number, index: number): () => number {
  let s = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35)) >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = [
  'Ada',
  'Grace',
  'Alan',
  'Edsger',
  'Barbara',
  'Donald',
  'Margaret',
  'Ken',
  'Frances',
  'Niklaus',
  'Radia',
  'John',
  'Katherine',
  'Tim',
  'Shafi',
  'Leslie',
  'Hedy',
  'Dennis',
  'Sophie',
  'Linus',
];
const LAST = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Dijkstra',
  'Liskov',
  'Knuth',
  'Hamilton',
  'Thompson',
  'Allen',
  'Wirth',
  'Perlman',
  'Backus',
  'Johnson',
  'Berners',
  'Goldwasser',
  'Lamport',
  'Lamarr',
  'Ritchie',
  'Wilson',
  'Torvalds',
];
const ORG_STEM = [
  'Northwind',
  'Contoso',
  'Fabrikam',
  'Tailspin',
  'Wingtip',
  'Litware',
  'Adatum',
  'Proseware',
  'Lucerne',
  'Margie',
  'Coho',
  'Fourth',
];
const ORG_KIND = ['Traders', 'Logistics', 'Group', 'Bank', 'University', 'Company'];
const TOPICS = [
  'travel policy',
  'quarterly report',
  'supplier contract',
  'onboarding guide',
  'price list',
  'incident review',
  'warehouse procedure',
  'customer FAQ',
  'board minutes',
  'product news',
];
const WORDS =
  'the a of to and in for on with by from shipment order invoice review team plan budget quarter customer supplier warehouse route contract policy process target delivery schedule risk audit report update approval meeting price volume account region partner market'.split(
    ' ',
  );
const QUESTIONS = [
  'How long does delivery take',
  'Who approves the budget',
  'When is the next audit',
  'Which region grew fastest',
  'Can an order be changed',
  'Who owns the supplier contract',
  'What is the return window',
  'Where is the main warehouse',
];

/** Index into a list of n with a skewed (roughly Zipf) popularity: the first names recur most. */
const skewed = (random: () => number, n: number) => Math.min(n - 1, Math.floor(n * random() ** 2.5));
const pick = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
const between = (random: () => number, lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

/** Every true entity of the corpus by its canonical name: the universe resolved clusters are scored against. */
export function trueEntities(): { entity: string; type: EntityOccurrence['type'] }[] {
  return [
    ...ORG_STEM.flatMap((stem) =>
      ORG_KIND.map((kind) => ({ entity: `${stem} ${kind}`, type: 'organization' as const })),
    ),
    ...FIRST.flatMap((first) => LAST.map((last) => ({ entity: `${first} ${last}`, type: 'person' as const }))),
  ];
}

// Enough aliases that most documents give resolution work, few enough that the canonical
// spelling stays the commonest one of every entity.
const VARIANT_RATE = 0.27;
const LEGAL_SUFFIX = ['Ltd', 'Inc'];

/**
 * The one-letter typos of a word by kind (deletions, substitutions, adjacent transpositions).
 * The first letter is left alone, so the typo still reads as a Capitalised word to a recogniser.
 */
function typosOf(word: string): string[][] {
  const deletions: string[] = [];
  const substitutions: string[] = [];
  const transpositions: string[] = [];
  for (let i = 1; i < word.length; i++) {
    deletions.push(word.slice(0, i) + word.slice(i + 1));
    for (const letter of 'abcdefghijklmnopqrstuvwxyz')
      if (letter !== word[i]) substitutions.push(word.slice(0, i) + letter + word.slice(i + 1));
    if (i + 1 < word.length && word[i] !== word[i + 1])
      transpositions.push(word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2));
  }
  return [deletions, substitutions, transpositions];
}

/**
 * The typos of each word of a list that can only be that word misspelt. Every first name goes
 * with every surname and every stem with every kind, so a typo equal to another word of the
 * list would be another true entity's canonical name, and one shared with another word's typos
 * would be an alias of two entities at once.
 */
function unambiguousTypos(words: readonly string[]): Map<string, string[][]> {
  const typos = new Map(words.map((word) => [word, typosOf(word)]));
  const sources = new Map<string, Set<string>>();
  for (const [word, kinds] of typos)
    for (const typo of kinds.flat()) sources.set(typo, (sources.get(typo) ?? new Set()).add(word));
  return new Map(
    [...typos].map(([word, kinds]) => [
      word,
      kinds.map((list) => list.filter((typo) => !words.includes(typo) && sources.get(typo)!.size === 1)),
    ]),
  );
}

const FIRST_TYPOS = unambiguousTypos(FIRST);
const LAST_TYPOS = unambiguousTypos(LAST);
const STEM_TYPOS = unambiguousTypos(ORG_STEM);

/**
 * One of a word's two usual misspellings. Misspellings recur in a real corpus (a template, a
 * habit, a copied line), and a fresh random typo at every occurrence would make nearly every
 * variant a name never seen before, which no corpus does.
 */
function misspell(random: () => number, typos: Map<string, string[][]>, word: string): string {
  const all = typos.get(word)!.flat();
  let h = 0;
  for (const c of word) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  const usual = [all[h % all.length]!, all[(h >>> 8) % all.length]!];
  return pick(random, usual);
}

function person(random: () => number, placed: EntityOccurrence[]): string {
  const first = FIRST[skewed(random, FIRST.length)]!;
  const last = LAST[skewed(random, LAST.length)]!;
  const entity = `${first} ${last}`;
  let surface = entity;
  if (random() < VARIANT_RATE)
    surface =
      random() < 2 / 3
        ? `${first} ${misspell(random, LAST_TYPOS, last)}`
        : `${misspell(random, FIRST_TYPOS, first)} ${last}`;
  placed.push({ surface, entity, type: 'person' });
  return surface;
}

/** Every alias keeps a word the extractor types as an organisation: Corp, Ltd, Inc or the kind itself. */
function organisation(random: () => number, placed: EntityOccurrence[]): string {
  const stem = ORG_STEM[skewed(random, ORG_STEM.length)]!;
  const kind = ORG_KIND[skewed(random, ORG_KIND.length)]!;
  const entity = `${stem} ${kind}`;
  let surface = entity;
  if (random() < VARIANT_RATE) {
    const aliases = [
      () => `${entity} ${pick(random, LEGAL_SUFFIX)}`,
      () => `${misspell(random, STEM_TYPOS, stem)} ${kind}`,
      ...(kind === 'Company' ? [() => `${stem} Corp`] : []),
    ];
    surface = pick(random, aliases)();
  }
  placed.push({ surface, entity, type: 'organization' });
  return surface;
}

function sentence(random: () => number, placed: EntityOccurrence[]): string {
  const words = Array.from({ length: between(random, 8, 18) }, () => pick(random, WORDS));
  const named = () => (random() < 0.5 ? person(random, placed) : organisation(random, placed));
  // Never right after the capitalised first word, which would read as part of the name.
  const at = between(random, 2, words.length - 1);
  words.splice(at, 0, named());
  // A third of sentences name a second entity, a word or more later: what relationships are made of.
  if (random() < 0.3) words.splice(between(random, at + 2, words.length), 0, named());
  const text = words.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

function paragraph(random: () => number, placed: EntityOccurrence[]): string {
  return Array.from({ length: between(random, 3, 7) }, () => sentence(random, placed)).join(' ');
}

/** The content of document `index`; its type comes from the mix. */
export function buildDocument(
  seed: number,
  index: number,
  type: CorpusType,
  options: { repeatedQa?: boolean } = {},
): CorpusDocument {
  const random = documentRandom(seed, index);
  const entities: EntityOccurrence[] = [];
  const topic = pick(random, TOPICS);
  const org = organisation(random, entities);
  const sections = Array.from({ length: between(random, 2, 6) }, (_, s) => ({
    heading: `${s + 1}. ${pick(random, ['Scope', 'Background', 'Details', 'Decisions', 'Figures', 'Next steps'])}`,
    paragraphs: Array.from({ length: between(random, 1, 4) }, () => paragraph(random, entities)),
  }));
  const qa = Array.from({ length: between(random, 0, 5) }, () => ({
    question: `${pick(random, QUESTIONS)} for ${organisation(random, entities)}?`,
    // About one in ten answers is left blank, as in a half-filled form.
    answer: random() < 0.1 ? null : sentence(random, entities),
  }));
  const tables =
    type === 'xlsx' || type === 'docx'
      ? Array.from({ length: type === 'xlsx' ? between(random, 1, 3) : 1 }, (_, t) => ({
          name: `${pick(random, ['Orders', 'Prices', 'Routes', 'Staff', 'Budget'])} ${t + 1}`,
          header: ['Item', 'Owner', 'Partner', 'Quantity', 'Amount'],
          rows: Array.from({ length: type === 'xlsx' ? between(random, 20, 150) : between(random, 3, 10) }, (_, r) => [
            `Item ${r + 1}`,
            person(random, entities),
            organisation(random, entities),
            between(random, 1, 500),
            Math.round(random() * 1e6) / 100,
          ]),
        }))
      : [];
  if (options.repeatedQa === true) qa.push(...repeatedQa(seed, index));
  return { index, type, title: `${org} ${topic} ${index}`, sections, qa, tables, entities };
}

// ---------------------------------------------------------------------------------------------
// The shared FAQ library of repeatedQa. Entry (family) f asks about one subject at one site in
// one of four frames, each frame worded three ways; its answer has two versions, the second
// keeping the first few words and changing the rest (an updated answer). All lower case apart
// from a sentence's first letter, so the mock's entity extractor finds no names in them.

const FAQ_SUBJECTS = [
  'a train ticket',
  'a parking permit',
  'a new laptop',
  'annual leave',
  'a visitor badge',
  'an expense claim',
  'a meeting room',
  'remote work days',
  'a software licence',
  'a desk move',
  'a company phone',
  'a training course',
  'a travel advance',
  'safety shoes',
  'a locker key',
  'the bike scheme',
  'an eye test',
  'a payslip copy',
  'the guest network',
  'a standing desk',
];
const FAQ_SITES = ['north', 'south', 'east', 'west', 'harbour', 'airport', 'river', 'market', 'castle', 'station'];
const FAQ_FRAMES: readonly (readonly ((s: string) => string)[])[] = [
  [(s) => `How do I request ${s}?`, (s) => `What is the way to ask for ${s}?`, (s) => `Where can I apply for ${s}?`],
  [(s) => `Who approves ${s}?`, (s) => `Which person signs off ${s}?`, (s) => `Whose approval does ${s} need?`],
  [
    (s) => `How long does ${s} take to arrange?`,
    (s) => `What is the waiting time for ${s}?`,
    (s) => `When will ${s} be ready?`,
  ],
  [
    (s) => `Is there a cost for ${s}?`,
    (s) => `Do staff pay anything for ${s}?`,
    (s) => `What does ${s} cost an employee?`,
  ],
];
const FAQ_FAMILIES = FAQ_SUBJECTS.length * FAQ_SITES.length * FAQ_FRAMES.length;
/** A family is drawn by the documents around FAQ_SPACING * f, so each one recurs in a handful of documents. */
const FAQ_SPACING = 6;

const capitalised = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}`;

/** The question of family f in wording w (0 the usual one, 1 and 2 reworded). */
export function faqQuestion(family: number, wording: number): string {
  const f = family % FAQ_FAMILIES;
  const subject = `${FAQ_SUBJECTS[f % FAQ_SUBJECTS.length]} at the ${FAQ_SITES[Math.floor(f / FAQ_SUBJECTS.length) % FAQ_SITES.length]} office`;
  return FAQ_FRAMES[Math.floor(f / (FAQ_SUBJECTS.length * FAQ_SITES.length))]![wording]!(subject);
}

/** The answer of family f, version 0 or 1 (1 keeps version 0's first three words). */
export function faqAnswer(seed: number, family: number, version: number): string {
  const random = documentRandom(seed ^ 0x0fa9_0fa9, family);
  const words = Array.from({ length: between(random, 10, 16) }, () => pick(random, WORDS));
  if (version === 1) for (let i = 3; i < words.length; i++) words[i] = pick(random, WORDS);
  return `${capitalised(words.join(' '))}.`;
}

/** The library pairs document `index` carries (none to two), from its own random stream. */
function repeatedQa(seed: number, index: number): QaPair[] {
  const random = documentRandom(seed ^ 0x5eed_0a0a, index);
  return Array.from({ length: pick(random, [0, 1, 1, 2]) }, () => {
    const family = Math.floor(index / FAQ_SPACING) + between(random, 0, 2);
    const wording = random() < 0.5 ? 0 : between(random, 1, 2);
    const answer = random() < 0.25 ? 1 : 0;
    return {
      question: faqQuestion(family, wording),
      answer: faqAnswer(seed, family, answer),
      repeat: { family, wording, answer },
    };
  });
}

export interface CorpusOptions {
  docs: number;
  mix: ReadonlyMap<CorpusType, number>;
  seed: number;
}

/** Where document `index` lives: a thousand documents per folder. */
export function relPathOf(index: number, type: CorpusType): string {
  return `part-${String(Math.floor(index / 1000)).padStart(4, '0')}/doc-${String(index).padStart(7, '0')}.${type}`;
}
