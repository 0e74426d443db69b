// `ingest search QUERY [--k N] [--json]`: the evidence template_fill would retrieve for a
// question (worker/retrieval.ts), with its scores and record:// citations beside the file (or
// URL) each cites, so an operator can see what the corpus answers before a form is filled from it.

import { parseArgs } from 'node:util';
import { assertEmbeddingModel } from '../lib/embed/recorded-model.ts';
import type { Queryable } from '../lib/db/database.ts';
import { embedder, type JobDeps } from '../worker/jobs.ts';
import type { Evidence } from '../worker/payloads.ts';
import { retrieve } from '../worker/retrieval.ts';
import { openWorkerRuntime } from '../worker/runtime.ts';
import type { RunContext } from './command.ts';
import { withTier1 } from './tier1.ts';
import { usageError } from './usage.ts';
import { withDatabase } from './with-database.ts';

export async function searchCommand(args: string[], { config, log, database }: RunContext): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { k: { type: 'string' }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  const query = positionals.join(' ').trim();
  if (query === '') throw usageError('give a QUERY');
  const k = values.k === undefined ? config.worker.evidenceK : Number(values.k);
  if (!Number.isSafeInteger(k) || k < 1 || k > 100) throw usageError('--k must be a whole number from 1 to 100');
  const runtime = await withTier1(log, () => openWorkerRuntime(config, log));
  try {
    const evidence = await withDatabase(
      config,
      (db) => searchEvidence(db, runtime.deps, query, k),
      {},
      database?.take(),
    );
    if (values.json) {
      process.stdout.write(`${JSON.stringify(evidence)}\n`);
      return 0;
    }
    if (evidence.length === 0) process.stdout.write('no evidence\n');
    evidence.forEach((e, i) =>
      process.stdout.write(
        `${i + 1}. [${e.kind}] score ${e.score.toFixed(4)}` +
          `${e.similarity === null ? '' : `, similarity ${e.similarity.toFixed(3)}`}${e.lexical ? ', lexical match' : ''}\n` +
          `   ${e.citation}  ${e.source}\n   ${e.text.replace(/\s+/g, ' ').slice(0, 300)}\n`,
      ),
    );
    return 0;
  } finally {
    await runtime.close();
  }
}

/** The evidence for `query`, once the database's vectors are known to be of the configured model. */
export async function searchEvidence(db: Queryable, deps: JobDeps, query: string, k: number): Promise<Evidence[]> {
  await assertEmbeddingModel(db, deps.models.embedder.embeddingModel.name);
  return retrieve(db, embedder(deps), query, k);
}
