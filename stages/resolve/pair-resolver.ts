// The pair resolver of stage 5 (i): one memoised model call per undecided name, with its
// candidates numbered, through the extractors' runner (lib/llm/run-extractor.ts): the memo is
// keyed by the prompt version, the LLM identity and this request's text (the name and its
// candidate set), so an unchanged question costs nothing and a model change never serves
// another identity's decision. Each candidate carries its type: one of another type is offered
// only when its name is near-identical (candidates.ts: rankCandidates), and choosing it gives the
// name the candidate's type as well as its root (a name typed a person in one window and an
// organisation in another), so the resolver decides the name and the type together.

import { PROMPTS } from '../../lib/llm/prompts.ts';
import { runExtractor, type ExtractorContext } from '../../lib/llm/run-extractor.ts';
import type { PairResolution } from '../../lib/llm/schemas.ts';

export interface Candidate {
  type: string;
  name: string;
  normalised: string;
}

/** The request as the model (and the mock, mock/pair-resolver.ts) reads it. */
export function pairRequest(type: string, name: string, candidates: readonly Candidate[]): string {
  const numbered = candidates.map((c, i) => `${i + 1}. ${c.name} (${c.type})`).join('\n');
  return `Type: ${type}\nName: ${name}\nCandidates:\n${numbered}`;
}

/** The candidate the resolver says names the same entity, or null (also for a number out of range). */
export async function resolvePair<C extends Candidate>(
  p: { type: string; name: string },
  candidates: readonly C[],
  context: ExtractorContext,
): Promise<C | null> {
  const answer = await runExtractor<PairResolution>(
    PROMPTS.pair_resolver,
    pairRequest(p.type, p.name, candidates),
    context,
  );
  return answer.match === null ? null : (candidates[answer.match - 1] ?? null);
}
