// `ingest prefill [PATH] [--dry-run] [--json]`: buys the extraction answers the next walk of the
// corpus would ask for through the vendor's Message Batches API, at half price, and stores them in
// the memo that walk reads (engine/prefill/prefill.ts). It opens no more than that needs: the state
// store (the database only when the store lives there), the converter and the model client.

import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openDatabase } from '../lib/db/open.ts';
import { requireStore } from '../lib/data-dir.ts';
import { createLlmClient, llmIdentity } from '../lib/llm/client.ts';
import type { Logger } from '../lib/log.ts';
import { DatabaseStateStore } from '../lib/state/database-store.ts';
import { openStateStore, type StateStore } from '../lib/state/store.ts';
import { converterOptions, createConverter } from '../stages/convert/index.ts';
import { prefill, type PrefillDeps, type PrefillSummary } from '../engine/prefill/prefill.ts';
import { holdPrefillLease } from '../engine/prefill/prefill-lease.ts';
import type { LeaseHold } from '../lib/lease.ts';
import { corpusDirectory } from './corpus-path.ts';
import { withTier1 } from './tier1.ts';
import { usageError } from './usage.ts';

export async function prefillCommand(
  args: string[],
  { config, log }: { config: Config; log: Logger },
): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'dry-run': { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length > 1) throw usageError('prefill takes at most one PATH');
  const root = corpusDirectory('prefill', positionals[0], config);
  const opened = await withTier1(log, () => openPrefill(config, log, values['dry-run']));
  let summary: PrefillSummary;
  try {
    summary = await prefill(opened.deps, root, { dryRun: values['dry-run'] });
  } finally {
    await opened.close();
  }
  process.stdout.write(values.json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary));
  return 0;
}

/** `dryRun`: it reads only, so it takes no lease and may run beside a prefill that buys. */
async function openPrefill(
  config: Config,
  log: Logger,
  dryRun: boolean,
): Promise<{ deps: PrefillDeps; close(): Promise<void> }> {
  let db: Database | null = null;
  let store: StateStore;
  let scratch: string | null = null;
  if (config.stateStore === 'database') {
    db = await openDatabase(config);
    store = new DatabaseStateStore(db);
  } else if (dryRun && !existsSync(config.stateStorePath)) {
    // A dry run writes nothing, a store included: with none yet, nothing is memoised or in flight,
    // which an empty store of its own, removed on close, says.
    scratch = await mkdtemp(path.join(tmpdir(), 'ingest-prefill-dry-run-'));
    store = await openStateStore(scratch);
  } else {
    requireStore(config, config.stateStorePath, 'engine state store');
    store = await openStateStore(config.stateStorePath);
  }
  let lease: LeaseHold | null;
  try {
    lease = dryRun ? null : await holdPrefillLease(config, db);
  } catch (error) {
    await store.close();
    await db?.close();
    throw error;
  }
  const converter = createConverter(converterOptions(config.convert));
  const client = createLlmClient();
  const model = config.models.extraction;
  return {
    deps: {
      config,
      store,
      converter,
      client,
      model,
      identity: llmIdentity(client, model),
      log,
      batchRequests: config.prefill.batchRequests,
      pollMs: config.prefill.pollMs,
    },
    async close() {
      await converter.close();
      await lease?.release();
      await store.close();
      await db?.close();
      if (scratch !== null) await rm(scratch, { recursive: true, force: true });
    },
  };
}

const dollars = (n: number) => `$${n.toFixed(2)}`;

function formatSummary(s: PrefillSummary): string {
  const { files, requests, answers, tokens } = s;
  const lines = [
    `${s.dryRun ? 'prefill (dry run: nothing submitted)' : 'prefill'} for ${s.model}`,
    `files: ${files.files} (${files.unchanged} unchanged, ${files.changed} to extract, ${files.unreadable} left to the walk)`,
    `requests: ${requests.asked} asked, ${requests.memoised} in the memo already, ${requests.inFlight} in flight, ` +
      (s.dryRun ? `${requests.toSubmit} to submit` : `${requests.submitted} submitted`),
  ];
  if (!s.dryRun) {
    lines.push(
      `batches: ${s.batches.submitted} submitted, ${s.batches.resumed} taken up from an earlier prefill` +
        (s.batches.lost > 0 ? `, ${s.batches.lost} no longer known to the endpoint (their answers left to buy)` : ''),
      `answers stored: ${answers.stored} (left to the walk: ${answers.invalid} invalid, ${answers.errored} errored, ` +
        `${answers.expired} expired, ${answers.canceled} canceled)`,
      `tokens: ${tokens.input} input, ${tokens.output} output`,
    );
  } else lines.push(`input tokens (estimated): ${tokens.estimatedInput}`);
  lines.push(
    s.price === null
      ? `price: ${s.model} is not in the price table`
      : `price${s.dryRun ? ' of the input' : ''}: ${dollars(s.price.standard)} at the standard rate, ` +
          `${dollars(s.price.batch)} through batches (prices of ${s.price.asOf})`,
  );
  if (s.stopped !== null) lines.push(`stopped early: ${s.stopped}`);
  return `${lines.join('\n')}\n`;
}
