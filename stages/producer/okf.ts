// The Open Knowledge Format 0.1 as this bundle writes it and `ingest bundle check` reads it
// (GoogleCloudPlatform/knowledge-catalog okf/SPEC.md at ee67a5ca; docs/DECISIONS.md "The
// producer"): concept files with YAML frontmatter whose `type` is required; index.md in every
// directory, without frontmatter but for the bundle root's `okf_version: "0.1"`; log.md with
// `## YYYY-MM-DD` sections, newest first; sources under a numbered `# Citations` heading, each
// a record://<target>/<uuid> link; timestamps ISO 8601 with an explicit offset.

import { parse, stringify } from 'yaml';
import { IngestError } from '../../lib/errors.ts';

export const OKF_VERSION = '0.1';
export const INDEX_FILE = 'index.md';
export const LOG_FILE = 'log.md';
export const CITATION_TARGETS = ['source_document', 'reference_item', 'concept'] as const;
export type CitationTargetName = (typeof CITATION_TARGETS)[number];

export const recordUri = (target: CitationTargetName, id: string) => `record://${target}/${id}`;
export const RECORD_URI = /record:\/\/([a-z_]+)\/([0-9a-f-]{36})/g;

/** ISO 8601 with an explicit offset (UTC written as +00:00, never Z). */
export const isoWithOffset = (at: Date): string => at.toISOString().replace(/Z$/, '+00:00');

/** A markdown document: YAML frontmatter (keys in the given order), a blank line, the body. */
export function withFrontmatter(fields: Record<string, unknown>, body: string): string {
  return `---\n${stringify(fields, { lineWidth: 0 })}---\n\n${body}`;
}

export interface Parsed {
  /** The frontmatter's fields; null when the file has none. */
  frontmatter: Record<string, unknown> | null;
  body: string;
}

export class FrontmatterError extends IngestError {
  constructor(message: string) {
    super('invalid_frontmatter', message);
  }
}

/** Splits a markdown file; a frontmatter block that is not a YAML mapping throws FrontmatterError. */
export function parseMarkdown(text: string): Parsed {
  const match = /^---\r?\n([\s\S]*?)\r?\n?---\r?\n/.exec(text);
  if (match === null) return { frontmatter: null, body: text };
  let fields: unknown;
  try {
    fields = parse(match[1]!);
  } catch (error) {
    throw new FrontmatterError(`its frontmatter is not valid YAML (${(error as Error).message.split('\n')[0]})`);
  }
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields))
    throw new FrontmatterError('its frontmatter is not a YAML mapping');
  return { frontmatter: fields as Record<string, unknown>, body: text.slice(match[0].length) };
}

/** Link text safe inside [...]. */
export const linkText = (text: string) => text.replace(/\s+/g, ' ').replace(/([[\]\\])/g, '\\$1');

export interface IndexEntry {
  title: string;
  /** Relative to the index's directory; a directory ends with '/'. */
  href: string;
  description: string;
}

/** An index.md (OKF 8): one section of entries; the bundle root's carries the version stamp. */
export function indexFile(heading: string, entries: readonly IndexEntry[], root: boolean): string {
  const body =
    `# ${heading}\n\n` +
    entries
      .map((e) => `* [${linkText(e.title)}](${encodeURI(e.href)}) - ${e.description.replace(/\s+/g, ' ')}\n`)
      .join('');
  return root ? withFrontmatter({ okf_version: OKF_VERSION }, body) : body;
}

export interface LogEntry {
  kind: 'Creation' | 'Update' | 'Removal';
  text: string;
}

const LOG_HEADING = '# Bundle log\n';
const DATE_HEADING = /^## (\d{4}-\d{2}-\d{2})\s*$/;

/**
 * log.md with `entries` recorded under `day` (YYYY-MM-DD): at the top of that day's section
 * when it is already the newest, else in a new section above the earlier ones, which are kept
 * as they were (the log is append-only).
 */
export function appendToLog(previous: string | null, day: string, entries: readonly LogEntry[]): string {
  const lines = entries.map((e) => `* **${e.kind}**: ${e.text}\n`).join('');
  const earlier = previous === null ? '' : previous.slice(previous.indexOf('\n## ') + 1 || previous.length);
  const newest = DATE_HEADING.exec(earlier.split('\n', 1)[0] ?? '')?.[1];
  if (newest === day) {
    const rest = earlier.slice(earlier.indexOf('\n') + 1);
    return `${LOG_HEADING}\n## ${day}\n${lines}${rest}`;
  }
  return `${LOG_HEADING}\n## ${day}\n${lines}${earlier === '' ? '' : `\n${earlier}`}`;
}

export { DATE_HEADING };
