// `ingest bundle check`: is a directory a conformant OKF 0.1 bundle, and does everything it cites
// exist? What it checks (docs/DECISIONS.md "The producer"):
//
//   conformance (OKF 0.1, the three rules of its section 9)
//     every markdown file but index.md and log.md has a YAML frontmatter block, with a non-empty
//     `type`; index.md files have no frontmatter but the bundle root's, which declares
//     okf_version "0.1"; log.md files hold `## YYYY-MM-DD` sections, newest first
//   listings      every index.md lists what its directory holds (each concept file and each
//                 subdirectory), and every relative link in it resolves
//   citations     every record://<target>/<uuid> names an allowed target (source_document,
//                 reference_item, concept) and a row that exists; a concept page's claim
//                 markers [n] name one of its numbered citations
//   timestamps    a `timestamp` is ISO 8601 with an explicit offset

import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../../lib/db/database.ts';
import {
  CITATION_TARGETS,
  DATE_HEADING,
  FrontmatterError,
  INDEX_FILE,
  LOG_FILE,
  OKF_VERSION,
  parseMarkdown,
  RECORD_URI,
  type CitationTargetName,
} from './okf.ts';

export interface BundleProblem {
  /** Relative to the bundle root. */
  file: string;
  problem: string;
}

export interface BundleCheck {
  files: number;
  concepts: number;
  citations: number;
  problems: BundleProblem[];
}

const TABLE_OF: Record<CitationTargetName, string> = {
  source_document: 'source_documents',
  reference_item: 'reference_items',
  concept: 'bundle_concepts',
};
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
const LINK = /\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)/g;

export async function checkBundle(root: string, db: Queryable): Promise<BundleCheck> {
  const out: BundleCheck = { files: 0, concepts: 0, citations: 0, problems: [] };
  const cited = new Map<string, { target: CitationTargetName; files: Set<string> }>();
  const problem = (file: string, text: string) => out.problems.push({ file, problem: text });

  const visit = async (dir: string): Promise<void> => {
    const entries = (await readdir(path.join(root, dir), { withFileTypes: true })).filter(
      (e) => !e.name.startsWith('.'),
    );
    for (const entry of entries) {
      const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) await visit(rel);
      else if (entry.name.endsWith('.md')) {
        out.files += 1;
        const text = await readFile(path.join(root, rel), 'utf8');
        if (entry.name === INDEX_FILE) checkIndex(rel, text, dir === '', entries, problem);
        else if (entry.name === LOG_FILE) checkLog(rel, text, problem);
        else {
          out.concepts += 1;
          checkConcept(rel, text, problem);
        }
        for (const m of text.matchAll(RECORD_URI)) {
          out.citations += 1;
          const target = m[1] as CitationTargetName;
          if (!CITATION_TARGETS.includes(target)) {
            problem(rel, `cites ${m[0]}: ${m[1]} is not a citation target (${CITATION_TARGETS.join(', ')})`);
            continue;
          }
          const seen = cited.get(m[2]!) ?? { target, files: new Set<string>() };
          seen.files.add(rel);
          cited.set(m[2]!, seen);
        }
      }
    }
    if (entries.some((e) => e.name === INDEX_FILE))
      await checkListedLinks(root, dir, await readFile(path.join(root, dir, INDEX_FILE), 'utf8'), problem);
  };
  await visit('');
  for (const [id, { target, files }] of await missingRows(db, cited))
    for (const file of files) problem(file, `cites record://${target}/${id}, which does not exist`);
  out.problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return out;
}

type Report = (file: string, problem: string) => void;

function frontmatterOf(file: string, text: string, report: Report): ReturnType<typeof parseMarkdown> | null {
  try {
    return parseMarkdown(text);
  } catch (error) {
    if (!(error instanceof FrontmatterError)) throw error;
    report(file, error.message);
    return null;
  }
}

function checkConcept(file: string, text: string, report: Report): void {
  const parsed = frontmatterOf(file, text, report);
  if (parsed === null) return;
  const { frontmatter, body } = parsed;
  if (frontmatter === null) return report(file, 'a concept file without a YAML frontmatter block');
  if (typeof frontmatter.type !== 'string' || frontmatter.type.trim() === '')
    report(file, 'its frontmatter has no non-empty `type`');
  const timestamp = frontmatter.timestamp;
  if (timestamp !== undefined && !(typeof timestamp === 'string' && ISO_WITH_OFFSET.test(timestamp)))
    report(file, `its timestamp ${JSON.stringify(timestamp)} is not ISO 8601 with an offset`);
  const citations = /^# Citations\s*$([\s\S]*)/m.exec(body);
  if (citations === null) return;
  const numbers = [...citations[1]!.matchAll(/^(\d+)\. /gm)].map((m) => Number(m[1]));
  if (numbers.some((n, i) => n !== i + 1)) report(file, 'its citations are not numbered 1, 2, 3, ...');
  const claims = body.slice(0, citations.index);
  for (const m of claims.matchAll(/ \[(\d+(?:, \d+)*)\]$/gm))
    for (const n of m[1]!.split(', ').map(Number))
      if (n < 1 || n > numbers.length) report(file, `a claim cites [${n}], which is not among its citations`);
}

function checkIndex(
  file: string,
  text: string,
  isRoot: boolean,
  entries: readonly { name: string; isDirectory(): boolean }[],
  report: Report,
): void {
  const parsed = frontmatterOf(file, text, report);
  if (parsed === null) return;
  const { frontmatter, body } = parsed;
  if (isRoot) {
    if (frontmatter?.okf_version !== OKF_VERSION)
      report(file, `the bundle root's index.md must declare okf_version "${OKF_VERSION}" in its frontmatter`);
    const others = Object.keys(frontmatter ?? {}).filter((k) => k !== 'okf_version');
    if (others.length > 0)
      report(file, `the root index.md frontmatter may hold only okf_version (found ${others.join(', ')})`);
  } else if (frontmatter !== null) report(file, "an index.md other than the bundle root's carries frontmatter");
  const listed = new Set([...body.matchAll(LINK)].map((m) => decodeURI(m[1]!).replace(/^\.\//, '').replace(/\/$/, '')));
  for (const e of entries) {
    const listable = e.isDirectory() || (e.name.endsWith('.md') && e.name !== INDEX_FILE && e.name !== LOG_FILE);
    if (listable && !listed.has(e.name)) report(file, `does not list ${e.isDirectory() ? `${e.name}/` : e.name}`);
  }
}

/** Every relative link of an index.md names a file or directory that exists. */
async function checkListedLinks(root: string, dir: string, text: string, report: Report): Promise<void> {
  for (const m of text.matchAll(LINK)) {
    const href = decodeURI(m[1]!);
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
    const target = href.startsWith('/') ? path.join(root, href) : path.join(root, dir, href);
    if (
      !(await stat(target).then(
        () => true,
        () => false,
      ))
    )
      report(dir === '' ? INDEX_FILE : `${dir}/${INDEX_FILE}`, `lists ${href}, which does not exist`);
  }
}

function checkLog(file: string, text: string, report: Report): void {
  const parsed = frontmatterOf(file, text, report);
  if (parsed?.frontmatter != null) report(file, 'log.md carries frontmatter');
  let previous: string | null = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('## ')) continue;
    const day = DATE_HEADING.exec(line)?.[1];
    if (day === undefined || Number.isNaN(Date.parse(day))) {
      report(file, `"${line}" is not a ## YYYY-MM-DD heading`);
      continue;
    }
    if (previous !== null && day >= previous)
      report(file, `its sections are not newest first (${day} after ${previous})`);
    previous = day;
  }
}

/** The cited ids with no row in their target's table. */
async function missingRows(
  db: Queryable,
  cited: ReadonlyMap<string, { target: CitationTargetName; files: Set<string> }>,
): Promise<[string, { target: CitationTargetName; files: Set<string> }][]> {
  const missing: [string, { target: CitationTargetName; files: Set<string> }][] = [];
  for (const target of CITATION_TARGETS) {
    const ids = [...cited].filter(([, c]) => c.target === target).map(([id]) => id);
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 5000) {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id::text FROM ${TABLE_OF[target]} WHERE id = ANY($1::uuid[])${target === 'concept' ? ' AND vanished_at IS NULL' : ''}`,
        [ids.slice(i, i + 5000)],
      );
      for (const r of rows) found.add(r.id);
    }
    for (const id of ids) if (!found.has(id)) missing.push([id, cited.get(id)!]);
  }
  return missing;
}
