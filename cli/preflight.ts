// `ingest preflight`: one cheap message with no system block to the configured model
// endpoint (SPEC.md 8 rule 6), so a dead key fails at minute one instead of mid-walk.

import type { Config } from '../lib/config.ts';
import { createLlmClient, llmIdentity, llmTier } from '../lib/llm/client.ts';

export async function preflightCommand(_args: string[], { config }: { config: Config }): Promise<number> {
  const client = createLlmClient();
  const identity = llmIdentity(client, config.models.extraction);
  try {
    const message = await client.messages.create(
      { model: config.models.extraction, max_tokens: 8, messages: [{ role: 'user', content: 'ping' }] },
      { timeout: 30_000 },
    );
    const text = message.content
      .map((b) => (b.type === 'text' ? b.text : ''))
      .join('')
      .trim();
    process.stdout.write(`preflight ok: tier ${llmTier()}, ${identity}, answered "${text.slice(0, 40)}"\n`);
    return 0;
  } catch (error) {
    const status = (error as { status?: number }).status;
    process.stderr.write(
      `ingest: preflight failed against ${identity} (tier ${llmTier()}): ${status === undefined ? '' : `HTTP ${status}, `}${(error as Error).message}\n`,
    );
    return 1;
  }
}
