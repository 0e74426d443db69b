// One concept drafted by the producer model: the registered prompt through the memoised
// extractor call (lib/llm/run-extractor.ts: memo key = prompt version, producer identity and the
// evidence text, so unchanged evidence never costs a call twice), then every claim checked
// against the evidence's numbered sources. A claim citing no source it was shown is dropped
// (counted); a draft left with no claim fails its concept alone.

import { PROMPTS } from '../../lib/llm/prompts.ts';
import { runExtractor, type ExtractorContext } from '../../lib/llm/run-extractor.ts';
import type { ConceptDraft } from '../../lib/llm/schemas.ts';
import type { Evidence } from './evidence.ts';
import { IngestError } from '../../lib/errors.ts';

export class ConceptDraftError extends IngestError {
  constructor(name: string) {
    super('concept_draft_uncited', `the draft of "${name}" has no claim citing the sources it was given`);
  }
}

export interface Drafted {
  draft: ConceptDraft;
  /** Claims dropped for citing a source the evidence does not number. */
  uncited: number;
}

export async function draftConcept(evidence: Evidence, context: ExtractorContext): Promise<Drafted> {
  const raw = await runExtractor<ConceptDraft>(PROMPTS.producer, evidence.text, context);
  const count = evidence.sources.length;
  let uncited = 0;
  const sections = raw.sections
    .map((section) => ({
      heading: section.heading,
      claims: section.claims.filter((claim) => {
        const traceable = claim.sources.every((n) => n >= 1 && n <= count);
        if (!traceable) uncited += 1;
        return traceable;
      }),
    }))
    .filter((section) => section.claims.length > 0);
  if (sections.length === 0) throw new ConceptDraftError(evidence.concept.name);
  return { draft: { description: raw.description, sections }, uncited };
}
