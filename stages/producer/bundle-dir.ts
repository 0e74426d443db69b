// Writing the bundle so that no reader ever sees half of one (docs/DECISIONS.md "The producer"):
// INGEST_BUNDLE_DIR holds versions/<name>/, each a whole bundle, and `current`, a symbolic link
// to one of them, replaced by rename(2), which is atomic. A run writes a new version from the
// bundle_concepts rows alone, then switches `current` to it; a run killed before the switch
// leaves the previous bundle published and its own version behind, removed by the next run.
// The version before the current one is kept for readers still inside it.
//
// A file whose bytes the previous version already holds is hard-linked from it, not written,
// so it keeps its inode and mtime: a concept page changes on disk only when its text does.

import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../../lib/db/database.ts';
import type { ConceptKind } from './concepts.ts';
import { appendToLog, indexFile, INDEX_FILE, LOG_FILE, type IndexEntry, type LogEntry } from './okf.ts';
import { renderConcept, type ConceptDocument, type ConceptRow, type Linked } from './render.ts';

const PAGE = 500;
const CURRENT = 'current';
const VERSIONS = 'versions';

/** The published bundle's directory: what readers (and `ingest bundle check`) open. */
export const publishedBundle = (bundleDir: string): string => path.join(bundleDir, CURRENT);

export interface Assembly {
  /** The version directory now published. */
  version: string;
  /** Files whose bytes changed (written, not linked), relative to the bundle root. */
  written: string[];
  /** Files carried over unchanged (hard-linked). */
  kept: number;
  /** Files the previous version had and this one does not. */
  removed: string[];
  concepts: number;
}

export async function assembleBundle(
  db: Queryable,
  bundleDir: string,
  run: { opId: string; now: Date; log: readonly LogEntry[] },
): Promise<Assembly> {
  const versions = path.join(bundleDir, VERSIONS);
  await mkdir(versions, { recursive: true });
  const previous = await realpath(publishedBundle(bundleDir)).catch(() => null);
  await removeVersionsBut(versions, [previous]);
  const name = `${run.now.toISOString().replace(/[-:.]/g, '')}-${run.opId.slice(0, 8)}`;
  const target = path.join(versions, name);
  await mkdir(target);
  const out: Assembly = { version: target, written: [], kept: 0, removed: [], concepts: 0 };
  const present = new Set<string>();

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

  // Leaf directories come whole and in order (rows by path), so each index is written as its
  // directory ends and nothing but the per-directory counts is held.
  const counts = new Map<string, number>();
  let leaf = null as { dir: string; entries: IndexEntry[] } | null;
  const closeLeaf = async () => {
    if (leaf === null) return;
    const { dir, entries } = leaf;
    leaf = null;
    await put(`${dir}/${INDEX_FILE}`, indexFile(path.posix.basename(dir), entries, false));
    counts.set(dir, entries.length);
  };
  for await (const page of conceptPages(db)) {
    const linked = await relatedConcepts(db, page);
    for (const row of page) {
      await put(row.path, renderConcept(row, linked(row)));
      const dir = path.posix.dirname(row.path);
      if (leaf?.dir !== dir) {
        await closeLeaf();
        leaf = { dir, entries: [] };
      }
      leaf.entries.push({
        title: row.name,
        href: path.posix.basename(row.path),
        description: row.document.description,
      });
      out.concepts += 1;
    }
  }
  await closeLeaf();
  await writeParentIndexes(counts, put);
  const previousLog =
    previous === null ? null : await readFile(path.join(previous, LOG_FILE), 'utf8').catch(() => null);
  const day = run.now.toISOString().slice(0, 10);
  await put(
    LOG_FILE,
    run.log.length === 0 && previousLog !== null ? previousLog : appendToLog(previousLog, day, run.log),
  );

  await switchCurrent(bundleDir, name);
  if (previous !== null) out.removed = (await filesUnder(previous)).filter((f) => !present.has(f));
  await removeVersionsBut(versions, [target, previous]);
  return out;
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

async function* conceptPages(db: Queryable): AsyncGenerator<ConceptRow[]> {
  let after = '';
  for (;;) {
    const { rows } = await db.query<StoredRow>(
      `SELECT id::text, kind, entity_type, name, path, document, drafted_at FROM bundle_concepts
        WHERE vanished_at IS NULL AND path > $1 ORDER BY path COLLATE "C" LIMIT ${PAGE}`,
      [after],
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
  const wanted = new Set(page.flatMap((row) => row.document.related.map((r) => `${r.kind}\u0000${r.name}`)));
  const split = [...wanted].map((k) => k.split('\u0000'));
  const { rows } = await db.query<{ kind: string; id: string; name: string; path: string }>(
    `SELECT b.kind, b.id::text, b.name, b.path FROM bundle_concepts b
       JOIN unnest($1::text[], $2::text[]) AS w(kind, name) ON b.kind = w.kind AND b.name = w.name
      WHERE b.vanished_at IS NULL ORDER BY b.path COLLATE "C"`,
    [split.map((s) => s[0]), split.map((s) => s[1])],
  );
  return (row) => {
    const names = new Set(row.document.related.map((r) => `${r.kind}\u0000${r.name}`));
    return rows.filter((r) => r.id !== row.id && names.has(`${r.kind}\u0000${r.name}`));
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
