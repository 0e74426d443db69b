// The extract-bench page sets (outside the repository; bench/extract-quality.ts says how to name
// them) and the fixed split of each into a part the cleaner may be tuned on and a part kept
// aside. A page is kept aside when the first two bytes of the SHA-256 of its id, read as a
// big-endian number, fall below 30 % of 65,536: the rule depends on nothing but the id, so the
// kept part never moves when rules or pages change, and a rule that only helps the tuned part
// shows up as a gap between the two figures.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Share of each set kept aside (never looked at page by page while tuning). */
export const KEPT_SHARE = 0.3;

export type Part = 'tuned' | 'kept';

export interface BenchPage {
  id: string;
  part: Part;
  /** The page kind from the set's meta.json (article, forum, product, ...), or 'article'. */
  kind: string;
  html: string;
  truth: string;
}

export interface PageSet {
  name: string;
  description: string;
  pages: BenchPage[];
}

/** The two development sets: folder under the benchmark root, and how the bench names them. */
const SETS = [
  {
    name: 'article-extraction',
    folder: 'data',
    description: 'scrapinghub/article-extraction-benchmark dev split (MIT): news and blog pages, many languages',
  },
  {
    name: 'wcxb-dev',
    folder: 'wcxb-dev',
    description:
      'WCXB v1.0 dev split by Murrough Foley (CC-BY-4.0): seven kinds of page (article, service, collection, listing, product, forum, documentation)',
  },
];

export function partOf(id: string): Part {
  const digest = createHash('sha256').update(`extract-bench kept-aside:${id}`).digest();
  return digest.readUInt16BE(0) < KEPT_SHARE * 65_536 ? 'kept' : 'tuned';
}

/** Every set found under the benchmark root, pages sorted by id; `limit` takes the first N of each. */
export function loadSets(root: string, limit?: number): PageSet[] {
  const sets: PageSet[] = [];
  for (const set of SETS) {
    const dir = path.join(root, set.folder);
    const truthFile = path.join(dir, 'ground-truth.json');
    if (!existsSync(truthFile)) continue;
    const truth = JSON.parse(readFileSync(truthFile, 'utf8')) as Record<string, { articleBody?: string }>;
    const metaFile = path.join(dir, 'meta.json');
    const meta = existsSync(metaFile)
      ? (JSON.parse(readFileSync(metaFile, 'utf8')) as Record<string, { page_type?: string }>)
      : {};
    const available = new Set(readdirSync(path.join(dir, 'html')));
    let ids = Object.keys(truth)
      .sort()
      .filter((id) => available.has(`${id}.html`));
    if (limit !== undefined) ids = ids.slice(0, limit);
    sets.push({
      name: set.name,
      description: set.description,
      pages: ids.map((id) => ({
        id,
        part: partOf(id),
        kind: meta[id]?.page_type ?? 'article',
        html: readFileSync(path.join(dir, 'html', `${id}.html`), 'utf8'),
        truth: truth[id]!.articleBody ?? '',
      })),
    });
  }
  return sets;
}
