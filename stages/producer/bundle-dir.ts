// Writing the bundle so that no reader ever sees half of one (docs/DECISIONS.md "The producer"):
// INGEST_BUNDLE_DIR holds versions/<name>/, each a whole bundle, and `current`, a symbolic link
// to one of them, replaced by rename(2), which is atomic. A run writes a new version, then
// switches `current` to it; a run killed before the switch leaves the previous bundle published
// and its own version behind, removed by the next run. The version before the current one is
// kept for readers still inside it.
//
// A new version is the previous one with what changed: the pages of concepts written since the
// last switch (bundle_concepts.pending) and of those linking to a concept written or removed,
// rendered from their rows; the index.md of every directory where a page came or went; the
// parent indexes and log.md. Every other file is hard-linked from the previous version, so it
// keeps its inode and mtime (as does a rendered file whose bytes did not change). The first
// version, or a run asked for everything, renders every page.
//
// A bundle that did not change keeps its version: with nothing written since the last switch
// no version is made, and a version whose every file the previous one holds byte for byte (a
// run asked for everything that found nothing new) is dropped unpublished.

import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../../lib/db/database.ts';
import type { ConceptKind } from './concepts.ts';
import { appendToLog, indexFile, INDEX_FILE, LOG_FILE, type LogEntry } from './okf.ts';
import { renderConcept, type ConceptDocument, type ConceptRow, type Linked } from './render.ts';

const PAGE = 500;
const CURRENT = 'current';
const VERSIONS = 'versions';
/** The directory of a concept's path, in SQL (paths are '/'-separated, always in a directory). */
const DIR_OF = `regexp_replace(path, '/[^/]*$', '')`;

/** The published bundle's directory: what readers (and `ingest bundle check`) open. */
export const publishedBundle = (bundleDir: string): string => path.join(bundleDir, CURRENT);

export interface Assembly {
  /** The version directory now published. */
  version: string;
  /** Whether a new version was published; false when the published one held this bundle already and was kept. */
  switched: boolean;
  /** Files whose bytes changed (written, not linked), relative to the bundle root. */
  written: string[];
  /** Files carried over unchanged (hard-linked). */
  kept: number;
  /** Files the previous version had and this one does not. */
  removed: string[];
  /** Pages rendered (the rest were carried over). */
  rendered: number;
  concepts: number;
}

export async function assembleBundle(
  db: Queryable,
  bundleDir: string,
  run: { opId: string; now: Date; log: readonly LogEntry[]; whole: boolean },
): Promise<Assembly> {
  const versions = path.join(bundleDir, VERSIONS);
  await mkdir(versions, { recursive: true });
  const previous = await realpath(publishedBundle(bundleDir)).catch(() => null);
  await removeVersionsBut(versions, [previous]);
  const whole = run.whole || previous === null;
  const stale = whole ? null : await stalePaths(db);
  const gone = await vanishedPaths(db);
  if (previous !== null && stale?.length === 0 && gone.size === 0 && run.log.length === 0)
    return unchanged(previous, await filesUnder(previous), await liveConcepts(db));
  const name = `${run.now.toISOString().replace(/[-:.]/g, '')}-${run.opId.slice(0, 8)}`;
  const target = path.join(versions, name);
  await mkdir(target);
  const out: Assembly = {
    version: target,
    switched: true,
    written: [],
    kept: 0,
    removed: [],
    rendered: 0,
    concepts: 0,
  };
  const present = new Set<string>();

  /** Writes `text` at `relPath`, or links the previous version's file when it holds these bytes. */
  const put = async (relPath: string, text: string): Promise<void> => {
    present.add(relPath);
    const file = path.join(target, relPath);
    await mkdir(path.dirname(file), { recursive: true });
    const before = previous === null ? null : path.join(previous, relPath);
    const old = before === null ? null : await readFile(before, 'utf8').catch(() => null);
    if (old === text) {
      await link(before!, file);
      out.kept += 1;
    } else {
      await writeFile(file, text);
      out.written.push(relPath);
    }
  };

  for await (const page of conceptPages(db, stale)) {
    const linked = await relatedConcepts(db, page);
    for (const row of page) await put(row.path, renderConcept(row, linked(row)));
    out.rendered += page.length;
  }
  const counts = await directoryCounts(db);
  const touched = whole ? null : new Set([...stale!, ...gone].map((p) => path.posix.dirname(p)));
  for (const dir of counts.keys())
    if (touched === null || touched.has(dir)) await put(`${dir}/${INDEX_FILE}`, await leafIndex(db, dir));
  await writeParentIndexes(counts, put);
  const previousLog =
    previous === null ? null : await readFile(path.join(previous, LOG_FILE), 'utf8').catch(() => null);
  const day = run.now.toISOString().slice(0, 10);
  await put(
    LOG_FILE,
    run.log.length === 0 && previousLog !== null ? previousLog : appendToLog(previousLog, day, run.log),
  );

  const before = previous === null ? [] : await filesUnder(previous);
  for (const relPath of before) {
    if (present.has(relPath) || gone.has(relPath) || !counts.has(path.posix.dirname(relPath))) continue;
    await mkdir(path.dirname(path.join(target, relPath)), { recursive: true });
    await link(path.join(previous!, relPath), path.join(target, relPath));
    present.add(relPath);
    out.kept += 1;
  }
  out.concepts = [...counts.values()].reduce((a, b) => a + b, 0);
  out.removed = before.filter((f) => !present.has(f));
  if (previous !== null && out.written.length === 0 && out.removed.length === 0) {
    await rm(target, { recursive: true, force: true });
    return unchanged(previous, before, out.concepts);
  }
  await switchCurrent(bundleDir, name);
  await removeVersionsBut(versions, [target, previous]);
  return out;
}

/** The published version, kept as it is. */
function unchanged(version: string, files: readonly string[], concepts: number): Assembly {
  return { version, switched: false, written: [], kept: files.length, removed: [], rendered: 0, concepts };
}

async function liveConcepts(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM bundle_concepts WHERE vanished_at IS NULL`,
  );
  return rows[0]!.n;
}

/** Pages to render: concepts written since the last switch, and those linking to one written or removed. */
async function stalePaths(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ path: string }>(
    `WITH moved AS (SELECT kind, name FROM bundle_concepts WHERE pending OR vanished_at IS NOT NULL)
     SELECT b.path FROM bundle_concepts b
      WHERE b.vanished_at IS NULL
        AND (b.pending OR EXISTS (SELECT 1 FROM jsonb_array_elements(b.document -> 'related') AS r
                                    JOIN moved m ON m.kind = r ->> 'kind' AND m.name = r ->> 'name'))
      ORDER BY b.path COLLATE "C"`,
  );
  return rows.map((r) => r.path);
}

async function vanishedPaths(db: Queryable): Promise<Set<string>> {
  const { rows } = await db.query<{ path: string }>(`SELECT path FROM bundle_concepts WHERE vanished_at IS NOT NULL`);
  return new Set(rows.map((r) => r.path));
}

/** Live concepts per leaf directory. */
async function directoryCounts(db: Queryable): Promise<Map<string, number>> {
  const { rows } = await db.query<{ dir: string; n: number }>(
    `SELECT ${DIR_OF} AS dir, count(*)::int AS n FROM bundle_concepts WHERE vanished_at IS NULL GROUP BY 1 ORDER BY 1`,
  );
  return new Map(rows.map((r) => [r.dir, r.n]));
}

async function leafIndex(db: Queryable, dir: string): Promise<string> {
  const { rows } = await db.query<{ name: string; path: string; description: string }>(
    `SELECT name, path, document ->> 'description' AS description FROM bundle_concepts
      WHERE vanished_at IS NULL AND ${DIR_OF} = $1 ORDER BY path COLLATE "C"`,
    [dir],
  );
  const entries = rows.map((r) => ({ title: r.name, href: path.posix.basename(r.path), description: r.description }));
  return indexFile(path.posix.basename(dir), entries, false);
}

/** Every directory above the leaves, each with an index of its subdirectories; the root's carries the stamp. */
async function writeParentIndexes(
  leaves: ReadonlyMap<string, number>,
  put: (relPath: string, text: string) => Promise<void>,
): Promise<void> {
  const children = new Map<string, Map<string, number>>([['.', new Map()]]);
  for (const [leaf, n] of leaves) {
    for (let dir = leaf; dir !== '.'; dir = path.posix.dirname(dir)) {
      const parent = path.posix.dirname(dir);
      const siblings = children.get(parent) ?? new Map<string, number>();
      siblings.set(dir, (siblings.get(dir) ?? 0) + n);
      children.set(parent, siblings);
    }
  }
  for (const [dir, subdirs] of children) {
    const entries = [...subdirs]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([sub, n]) => ({
        title: path.posix.basename(sub),
        href: `${path.posix.basename(sub)}/`,
        description: `${n} concept${n === 1 ? '' : 's'}`,
      }));
    const root = dir === '.';
    await put(
      root ? INDEX_FILE : `${dir}/${INDEX_FILE}`,
      indexFile(root ? 'Knowledge bundle' : path.posix.basename(dir), entries, root),
    );
  }
}

interface StoredRow {
  id: string;
  kind: ConceptKind;
  entity_type: string;
  name: string;
  path: string;
  document: ConceptDocument;
  drafted_at: Date | string;
}

const COLUMNS = 'id::text, kind, entity_type, name, path, document, drafted_at';

/** The live concepts (or those at `paths`), a page at a time in path order. */
async function* conceptPages(db: Queryable, paths: readonly string[] | null): AsyncGenerator<ConceptRow[]> {
  let after = '';
  for (let i = 0; ; i += PAGE) {
    const { rows } =
      paths === null
        ? await db.query<StoredRow>(
            `SELECT ${COLUMNS} FROM bundle_concepts WHERE vanished_at IS NULL AND path > $1
              ORDER BY path COLLATE "C" LIMIT ${PAGE}`,
            [after],
          )
        : await db.query<StoredRow>(
            `SELECT ${COLUMNS} FROM bundle_concepts WHERE path = ANY($1::text[]) ORDER BY path COLLATE "C"`,
            [paths.slice(i, i + PAGE)],
          );
    if (rows.length === 0) return;
    yield rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      entityType: r.entity_type,
      name: r.name,
      path: r.path,
      document: r.document,
      draftedAt: new Date(r.drafted_at),
    }));
    after = rows.at(-1)!.path;
  }
}

/** For a page of concepts, a lookup of each one's related concepts as they stand now, by path. */
async function relatedConcepts(db: Queryable, page: readonly ConceptRow[]): Promise<(row: ConceptRow) => Linked[]> {
  const key = (kind: string, name: string) => `${kind}\u0000${name}`;
  const wanted = [...new Set(page.flatMap((row) => row.document.related.map((r) => key(r.kind, r.name))))].map((k) =>
    k.split('\u0000'),
  );
  const { rows } = await db.query<{ kind: string; id: string; name: string; path: string }>(
    `SELECT b.kind, b.id::text, b.name, b.path FROM bundle_concepts b
       JOIN unnest($1::text[], $2::text[]) AS w(kind, name) ON b.kind = w.kind AND b.name = w.name
      WHERE b.vanished_at IS NULL ORDER BY b.path COLLATE "C"`,
    [wanted.map((w) => w[0]), wanted.map((w) => w[1])],
  );
  return (row) => {
    const names = new Set(row.document.related.map((r) => key(r.kind, r.name)));
    return rows.filter((r) => r.id !== row.id && names.has(key(r.kind, r.name)));
  };
}

async function switchCurrent(bundleDir: string, version: string): Promise<void> {
  const temp = path.join(bundleDir, `.current-${randomBytes(6).toString('hex')}`);
  await symlink(path.join(VERSIONS, version), temp);
  await rename(temp, publishedBundle(bundleDir));
}

async function removeVersionsBut(versions: string, keep: readonly (string | null)[]): Promise<void> {
  const kept = new Set(keep.filter((k): k is string => k !== null).map((k) => path.basename(k)));
  for (const entry of await readdir(versions)) {
    if (!kept.has(entry)) await rm(path.join(versions, entry), { recursive: true, force: true });
  }
}

/** The files under `dir`, relative to it, '/'-separated. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}
