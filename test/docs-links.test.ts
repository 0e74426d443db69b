// The repository explains itself: every citation in README.md, the other markdown files and the
// comments of every .ts file leads to a file, folder or heading that exists in the repository,
// and none points at the requirement documents that stay outside it. What counts as a citation:
//   - a markdown link [text](target), resolved from the markdown file's folder, with its #anchor;
//   - a repository path in prose or in a comment (docs/behaviour/states.md#memo-and-stamping,
//     lib/state/store.ts, stages/resolve/), resolved from the repository root, with its #anchor
//     or a quoted heading after a markdown file (docs/DECISIONS.md "The producer").
// Anchors follow GitHub's slug rules (lower case, punctuation dropped, spaces to hyphens, a
// repeated heading numbered -1, -2, ...), so a citation that works here works on GitHub. A
// quoted heading is prose a reader searches for, so it may be the start of a longer heading
// ("The producer" finds "The producer and its knowledge bundle").

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Folders a repository path starts with; a path that starts elsewhere is not taken as a citation. */
const TOP_FOLDERS = [
  'bin',
  'cli',
  'http',
  'engine',
  'stages',
  'lib',
  'mock',
  'worker',
  'schema',
  'bench',
  'test',
  'docs',
  'scripts',
  'examples',
  '.github',
  '.ci',
];
const EXTENSIONS = ['ts', 'md', 'sql', 'yaml', 'yml', 'sh', 'json'];

/** Text files whose every line is searched for the outside documents' names. */
const TEXT_FILE = /\.(?:ts|md|sql|ya?ml|sh|json)$|^Dockerfile$|^run$/;

/**
 * The names of the documents outside the repository, built from parts so that this file does
 * not name them itself. An "okf/" path is the knowledge-format repository's own document.
 */
const OUTSIDE = new RegExp(
  [`(?<!okf/)\\b${'SPEC'}\\.md\\b`, `\\b${'DESIGN'}\\.md\\b`, `\\.\\./${'shared'}\\b`].join('|'),
);

/** GitHub's anchor for a heading's text. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a markdown text's headings, fenced code left out, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of outsideFences(markdown)) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (m === null) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function outsideFences(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').filter((line) => {
    if (/^ {0,3}(```|~~~)/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

export interface Citation {
  /** The file or folder, relative to the repository root. */
  target: string;
  /** The anchor asked for, if any. */
  anchor: string | null;
  /** A quoted heading after a markdown file, if any. */
  heading: string | null;
  /** What was written, for the failure message. */
  written: string;
}

const REPO_PATH = new RegExp(
  `(?<![\\w./-])((?:${TOP_FOLDERS.map((f) => f.replace('.', '\\.')).join('|')})/(?:[\\w.-]+/)*(?:[\\w.-]+\\.(?:${EXTENSIONS.join('|')})\\b|[\\w.-]+/|))(?![\\w/-])` +
    `(?:#([\\w-]+)|\\s+"([^"\\n]+)")?`,
  'g',
);

/** Repository paths cited in prose or a comment, from the repository root. */
export function repoPathCitations(text: string): Citation[] {
  const out: Citation[] = [];
  for (const m of text.matchAll(REPO_PATH)) {
    const target = m[1]!;
    const heading = target.endsWith('.md') ? (m[3] ?? null) : null;
    out.push({ target, anchor: m[2] ?? null, heading, written: m[0]!.trim() });
  }
  return out;
}

/** Markdown links of a markdown file, resolved from its folder (web links and mail left out). */
export function linkCitations(markdown: string, file: string): Citation[] {
  const out: Citation[] = [];
  for (const line of outsideFences(markdown)) {
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const link = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
      const [where, anchor] = link.split('#', 2) as [string, string | undefined];
      const target = where === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), where));
      out.push({ target, anchor: anchor ?? null, heading: null, written: `(${link})` });
    }
  }
  return out;
}

/** The comments of a TypeScript source, every one: the trivia before and after each token, in order. */
export function comments(source: string, fileName = 'file.ts'): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const starts = new Set<number>();
  const out: { pos: number; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    const ranges = [
      ...(ts.getLeadingCommentRanges(source, node.pos) ?? []),
      ...(ts.getTrailingCommentRanges(source, node.end) ?? []),
    ];
    for (const range of ranges) {
      if (starts.has(range.pos)) continue;
      starts.add(range.pos);
      out.push({ pos: range.pos, text: source.slice(range.pos, range.end) });
    }
    for (const child of node.getChildren(file)) visit(child);
  };
  visit(file);
  return out.sort((a, b) => a.pos - b.pos).map((c) => c.text);
}

/** Why a citation does not hold, or null when it does. */
export function brokenCitation(citation: Citation, readText: (file: string) => string | null): string | null {
  if (citation.target.startsWith('..')) return 'leads outside the repository';
  const full = path.join(ROOT, citation.target);
  if (!existsSync(full)) return 'no such file or folder';
  if (citation.anchor === null && citation.heading === null) return null;
  if (statSync(full).isDirectory() || !citation.target.endsWith('.md'))
    return 'an anchor on a file that is not markdown';
  const known = anchors(readText(citation.target) ?? '');
  if (citation.anchor !== null && !known.has(citation.anchor)) return `no heading #${citation.anchor}`;
  const start = citation.heading === null ? null : slug(citation.heading);
  if (start !== null && ![...known].some((a) => a.startsWith(start))) return `no heading "${citation.heading}"`;
  return null;
}

/** Every text file of the repository, relative to its root; dependencies and data left out. */
function repositoryFiles(dir = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const name = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules' || (entry.name.startsWith('.') && !['.github', '.ci'].includes(entry.name)))
        continue;
      out.push(...repositoryFiles(name));
    } else if (TEXT_FILE.test(entry.name) && entry.name !== 'package-lock.json') out.push(name);
  }
  return out;
}

const files = repositoryFiles();
const cache = new Map<string, string>();
const read = (file: string): string | null => {
  if (!cache.has(file)) {
    const full = path.join(ROOT, file);
    if (!existsSync(full) || statSync(full).isDirectory()) return null;
    cache.set(file, readFileSync(full, 'utf8'));
  }
  return cache.get(file)!;
};

/** Each file's citations: markdown's links and paths, comments' paths for .ts, paths for the rest. */
function citationsOf(file: string): Citation[] {
  const text = read(file)!;
  if (file.endsWith('.md')) return [...linkCitations(text, file), ...repoPathCitations(text)];
  if (file.endsWith('.ts')) return comments(text, file).flatMap(repoPathCitations);
  return repoPathCitations(text);
}

test('the slug of a heading is GitHub’s', () => {
  assert.is(slug('Stage 1: source walk'), 'stage-1-source-walk');
  assert.is(slug('pipeline_runs row'), 'pipeline_runs-row');
  assert.is(slug('Q&A dedup proposer'), 'qa-dedup-proposer');
  assert.is(slug('GET /walk-status'), 'get-walk-status');
  assert.is(slug('The `okf_version` of [the bundle](x.md)'), 'the-okf_version-of-the-bundle');
  assert.equal([...anchors('# A\n```\n# B\n```\n## A\n')], ['a', 'a-1']);
});

test('citations are read from links, prose paths, quoted headings and comments', () => {
  assert.equal(linkCitations('see [x](../a.md#b), [y](#c), [z](https://e.com/d.md), `[w](v.md)`', 'docs/p.md'), [
    { target: 'a.md', anchor: 'b', heading: null, written: '(../a.md#b)' },
    { target: 'docs/p.md', anchor: 'c', heading: null, written: '(#c)' },
  ]);
  assert.equal(
    repoPathCitations('lib/x.ts, docs/A.md "The Producer", stages/y/ and docs/B.md#k; not a/b.ts or lib/state'),
    [
      { target: 'lib/x.ts', anchor: null, heading: null, written: 'lib/x.ts' },
      { target: 'docs/A.md', anchor: null, heading: 'The Producer', written: 'docs/A.md "The Producer"' },
      { target: 'stages/y/', anchor: null, heading: null, written: 'stages/y/' },
      { target: 'docs/B.md', anchor: 'k', heading: null, written: 'docs/B.md#k' },
    ],
  );
  assert.equal(comments('const a = `// no`; // one\n/* two */ function f() {\n  // three\n}\n'), [
    '// one',
    '/* two */',
    '// three',
  ]);
});

test('a broken citation is caught: a missing file, a missing heading, an anchor on code', () => {
  const broken = (target: string, anchor: string | null = null, heading: string | null = null) =>
    brokenCitation({ target, anchor, heading, written: target }, read);
  assert.is(broken('docs/behaviour/states.md', 'memo-and-stamping'), null);
  assert.is(broken('docs/behaviour/states.md', null, 'Memo and'), null);
  assert.is(broken('docs/behaviour/no-such-page.md'), 'no such file or folder');
  assert.is(broken('docs/behaviour/states.md', 'no-such-heading'), 'no heading #no-such-heading');
  assert.is(broken('docs/behaviour/states.md', null, 'No such heading'), 'no heading "No such heading"');
  assert.is(broken('lib/ids.ts', 'keys'), 'an anchor on a file that is not markdown');
  assert.ok(OUTSIDE.test(['see ', 'SPEC', '.md 3'].join('')));
  assert.not.ok(OUTSIDE.test('okf/' + 'SPEC' + '.md at ee67a5ca'));
});

test('every citation in the repository leads to a file or heading that exists', () => {
  assert.ok(files.length > 200, `the repository was read (${files.length} files)`);
  const broken: string[] = [];
  for (const file of files) {
    for (const citation of citationsOf(file)) {
      const why = brokenCitation(citation, read);
      if (why !== null) broken.push(`${file}: ${citation.written}: ${why}`);
    }
  }
  assert.equal(broken, []);
});

test('nothing cites the requirement documents outside the repository', () => {
  const mentions: string[] = [];
  for (const file of files) {
    read(file)!
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE.test(line)) mentions.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.equal(mentions, []);
});

test.run();
