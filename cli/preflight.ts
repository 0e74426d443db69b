// `ingest preflight`: one cheap message with no system block to the configured model endpoint
// (SPEC.md 8 rule 6; lib/llm/preflight.ts), so a dead key fails at minute one instead of mid-walk.

import type { Config } from '../lib/config.ts';
import { describePreflight, preflightPing } from '../lib/llm/preflight.ts';

export async function preflightCommand(_args: string[], { config }: { config: Config }): Promise<number> {
  const outcome = await preflightPing(config.models.extraction);
  if (outcome.ok) {
    process.stdout.write(`preflight ok: ${describePreflight(outcome)}\n`);
    return 0;
  }
  process.stderr.write(
    `ingest: preflight failed against ${outcome.identity} (tier ${outcome.tier}): ${describePreflight(outcome)}\n`,
  );
  return 1;
}
