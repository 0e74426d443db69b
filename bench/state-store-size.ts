// How big the engine state store grows per 10k chunks, next to the embeddings it does NOT
// hold (they live once, in record_embeddings). Walks a generated corpus on the mock tier.
//
//   node bench/state-store-size.ts [--docs N] [--chunks-per-doc K] [--json FILE]

import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { WALKS_ONLY } from './engines.ts';
import { loadConfig } from '../lib/config.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { startMockTier } from './mock-tier.ts';
import { walk } from '../engine/walk/walk.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '1000' },
    'chunks-per-doc': { type: 'string', default: '10' },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
const CHUNKS = Number(args['chunks-per-doc']);

const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-state-'));
try {
  const corpus = path.join(root, 'corpus');
  for (let d = 0; d < DOCS; d++) {
    const dir = path.join(corpus, `part-${d % 20}`);
    await mkdir(dir, { recursive: true });
    // Paragraphs of ~1,100 characters: one chunk each, and distinct across the corpus.
    const paragraphs = Array.from(
      { length: CHUNKS },
      (_, p) =>
        `Record ${d}-${p}. Ada Lovelace reviewed shipment ${d * 31 + p} for Northwind Traders. ${`Line ${d}.${p} of the ledger notes. `.repeat(28)}`,
    );
    await writeFile(path.join(dir, `doc-${d}.md`), `# Document ${d}\n\n${paragraphs.join('\n\n')}\n`);
  }
  const config = loadConfig(
    { INGEST_DATA_DIR: path.join(root, 'data'), INGEST_LOG_LEVEL: 'silent', ...WALKS_ONLY },
    root,
  );
  // Tier 1 in this process, as `ingest walk` starts it (cli/tier1.ts).
  const tier = await startMockTier();
  const engine = await openLifespan(config, pino({ level: 'silent' }));
  const started = Date.now();
  const summary = await walk(engine, { sourcePath: corpus });
  const seconds = (Date.now() - started) / 1000;
  const { rows } = await engine.db.query<{ chunks: number; vectors: number; table_bytes: string }>(
    `SELECT (SELECT count(*)::int FROM content_chunks) AS chunks, (SELECT count(*)::int FROM record_embeddings) AS vectors,
            pg_total_relation_size('record_embeddings')::text AS table_bytes`,
  );
  const itemMemos = await engine.store.itemCount();
  const innerMemos = await engine.store.memoCount();
  await engine.close();
  await tier.stop();
  const file = statSync(path.join(config.stateStorePath, 'state.mdb'));
  const { chunks, vectors, table_bytes } = rows[0]!;
  const per10k = (bytes: number) => (bytes / chunks) * 10_000;
  const result = {
    docs: DOCS,
    chunks,
    vectors,
    itemMemos,
    innerMemos,
    failed: summary.items.failed,
    walkSeconds: seconds,
    stateStoreBytes: file.blocks * 512,
    stateStoreBytesPer10kChunks: per10k(file.blocks * 512),
    embeddingsTableBytes: Number(table_bytes),
    embeddingsTableBytesPer10kChunks: per10k(Number(table_bytes)),
  };
  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MB`;
  console.log(`| figure | value |\n|---|---|`);
  console.log(`| documents / chunks / vectors | ${DOCS} / ${chunks} / ${vectors} |`);
  console.log(`| item memos / inner (extractor) memos | ${itemMemos} / ${innerMemos} |`);
  console.log(
    `| state store on disk | ${mb(result.stateStoreBytes)} (${mb(result.stateStoreBytesPer10kChunks)} per 10k chunks) |`,
  );
  console.log(
    `| record_embeddings (table + indexes) | ${mb(result.embeddingsTableBytes)} (${mb(result.embeddingsTableBytesPer10kChunks)} per 10k chunks) |`,
  );
  console.log(`| cold walk, mock tier, PGlite | ${seconds.toFixed(1)} s, ${summary.items.failed} failed |`);
  if (args.json) await writeFile(args.json, JSON.stringify(result, null, 2));
} finally {
  rmSync(root, { recursive: true, force: true });
}
