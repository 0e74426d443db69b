// The synthetic corpus of the throughput benchmarks (`ingest bench corpus`). Document i is a
// function of (seed, i) alone, so the corpus streams: one document is built, rendered and
// written at a time, whatever N is, and any document can be rebuilt on its own.
//
// What a document holds, so every stage has work: headings and paragraphs of plausible
// length; a Q&A section ("Q:" / "A:" lines, now and then a blank answer for the blank-form
// gate); named people and organisations drawn from one pool with a skewed popularity, so the
// same names recur across many documents (stage 5 has mentions to resolve); tables (a sheet
// per table in workbooks, a table in DOCX).

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

export interface CorpusDocument {
  index: number;
  type: CorpusType;
  title: string;
  sections: Section[];
  qa: { question: string; answer: string | null }[];
  tables: Table[];
}

export class CorpusMixError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CorpusMixError';
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

function person(random: () => number): string {
  return `${FIRST[skewed(random, FIRST.length)]} ${LAST[skewed(random, LAST.length)]}`;
}

function organisation(random: () => number): string {
  return `${ORG_STEM[skewed(random, ORG_STEM.length)]} ${ORG_KIND[skewed(random, ORG_KIND.length)]}`;
}

function sentence(random: () => number): string {
  const words = Array.from({ length: between(random, 8, 18) }, () => pick(random, WORDS));
  const named = random() < 0.5 ? person(random) : organisation(random);
  words.splice(between(random, 1, words.length - 1), 0, named);
  const text = words.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

function paragraph(random: () => number): string {
  return Array.from({ length: between(random, 3, 7) }, () => sentence(random)).join(' ');
}

/** The content of document `index`; its type comes from the mix. */
export function buildDocument(seed: number, index: number, type: CorpusType): CorpusDocument {
  const random = documentRandom(seed, index);
  const topic = pick(random, TOPICS);
  const org = organisation(random);
  const sections = Array.from({ length: between(random, 2, 6) }, (_, s) => ({
    heading: `${s + 1}. ${pick(random, ['Scope', 'Background', 'Details', 'Decisions', 'Figures', 'Next steps'])}`,
    paragraphs: Array.from({ length: between(random, 1, 4) }, () => paragraph(random)),
  }));
  const qa = Array.from({ length: between(random, 0, 5) }, () => ({
    question: `${pick(random, QUESTIONS)} for ${organisation(random)}?`,
    // About one in ten answers is left blank, as in a half-filled form.
    answer: random() < 0.1 ? null : sentence(random),
  }));
  const tables =
    type === 'xlsx' || type === 'docx'
      ? Array.from({ length: type === 'xlsx' ? between(random, 1, 3) : 1 }, (_, t) => ({
          name: `${pick(random, ['Orders', 'Prices', 'Routes', 'Staff', 'Budget'])} ${t + 1}`,
          header: ['Item', 'Owner', 'Partner', 'Quantity', 'Amount'],
          rows: Array.from({ length: type === 'xlsx' ? between(random, 20, 150) : between(random, 3, 10) }, (_, r) => [
            `Item ${r + 1}`,
            person(random),
            organisation(random),
            between(random, 1, 500),
            Math.round(random() * 1e6) / 100,
          ]),
        }))
      : [];
  return { index, type, title: `${org} ${topic} ${index}`, sections, qa, tables };
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
