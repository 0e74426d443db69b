// A concept's page, rendered from its bundle_concepts row alone (so a bundle can always be
// rebuilt without the model): frontmatter, the drafted sections with each claim's source
// numbers, links to the related concepts that exist, and the numbered citations, which are the
// evidence's sources followed by the related concepts.

import type { ConceptDraft } from '../../lib/llm/schemas.ts';
import type { ConceptKind } from './concepts.ts';
import type { RelatedName, Source } from './evidence.ts';
import { isoWithOffset, linkText, recordUri, withFrontmatter } from './okf.ts';

/** What bundle_concepts.document holds: everything a page needs but the related concepts' paths. */
export interface ConceptDocument extends ConceptDraft {
  citations: Source[];
  related: RelatedName[];
}

export interface ConceptRow {
  id: string;
  kind: ConceptKind;
  entityType: string;
  name: string;
  path: string;
  document: ConceptDocument;
  draftedAt: Date;
}

/** A related concept as it stands in the bundle. */
export interface Linked {
  id: string;
  name: string;
  path: string;
}

export const conceptType = (kind: ConceptKind, entityType: string): string =>
  kind === 'topic' ? 'Topic' : entityType.charAt(0).toUpperCase() + entityType.slice(1);

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

export function renderConcept(row: ConceptRow, related: readonly Linked[]): string {
  const { document } = row;
  const marks = (numbers: readonly number[]) => ` [${numbers.join(', ')}]`;
  const sections = document.sections
    .map(
      (s) => `## ${oneLine(s.heading)}\n\n${s.claims.map((c) => `- ${oneLine(c.text)}${marks(c.sources)}\n`).join('')}`,
    )
    .join('\n');
  const first = document.citations.length + 1;
  const relatedSection =
    related.length === 0
      ? ''
      : `\n## Related\n\n${related.map((r, i) => `- [${linkText(r.name)}](/${encodeURI(r.path)})${marks([first + i])}\n`).join('')}`;
  const citations = [
    ...document.citations.map((s) => `[${linkText(s.title)}](${recordUri(s.target, s.id)}) (${oneLine(s.place)})`),
    ...related.map((r) => `[${linkText(r.name)}](${recordUri('concept', r.id)})`),
  ];
  const body =
    `# ${oneLine(row.name)}\n\n${oneLine(document.description)}\n\n${sections}${relatedSection}\n` +
    `# Citations\n\n${citations.map((c, i) => `${i + 1}. ${c}\n`).join('')}`;
  return withFrontmatter(
    {
      type: conceptType(row.kind, row.entityType),
      title: row.name,
      description: oneLine(document.description),
      resource: recordUri('concept', row.id),
      tags: [row.kind === 'topic' ? 'topic' : row.entityType],
      timestamp: isoWithOffset(row.draftedAt),
    },
    body,
  );
}
