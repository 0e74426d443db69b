// A walkable lifespan for tests: a temp corpus and state store on the target database, with
// tier 1 started first when no model is configured, as `ingest walk` does (cli/tier1.ts).

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../lib/config.ts';
import { openLifespan, type Lifespan } from '../../engine/lifespan.ts';
import type { FlowPass } from '../../engine/walk/passes.ts';
import { withTier1 } from '../../cli/tier1.ts';
import { openTestDatabase, type TestDatabase } from './db.ts';
import { walk } from '../../engine/walk/walk.ts';
import { rowsInContentTerms } from './content.ts';
import { stateInContentTerms } from './lmdb-store.ts';

export interface WalkFixture {
  root: string;
  corpus: string;
  target: TestDatabase;
  lifespan: Lifespan;
  write(relPath: string, content: string | Uint8Array): Promise<void>;
  /** Reopens the lifespan (a new process would): same database, same state store; env overrides apply from now on. */
  reopen(passes?: FlowPass[], env?: Record<string, string>): Promise<void>;
  dispose(): Promise<void>;
}

export async function walkFixture(
  options: { passes?: FlowPass[]; env?: Record<string, string> } = {},
): Promise<WalkFixture> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-walk-'));
  const corpus = path.join(root, 'corpus');
  await mkdir(corpus);
  const target = await openTestDatabase();
  // The producer chains after a walk only where a test asks for it (test/producer.test.ts).
  let env: Record<string, string> = {
    INGEST_DATA_DIR: root,
    INGEST_SINK_FLUSH_MS: '5',
    INGEST_PRODUCER_AFTER_WALK: 'false',
    ...options.env,
  };
  const log = pino({ level: 'silent' });
  const open = (passes?: FlowPass[]) =>
    withTier1(log, () => openLifespan(loadConfig(env, root), log, { db: target.db, ...(passes ? { passes } : {}) }));
  const fixture: WalkFixture = {
    root,
    corpus,
    target,
    lifespan: await open(options.passes),
    async write(relPath, content) {
      const file = path.join(corpus, relPath);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, content);
    },
    async reopen(passes, overrides) {
      env = { ...env, ...overrides };
      await fixture.lifespan.close();
      fixture.lifespan = await open(passes ?? options.passes);
    },
    async dispose() {
      await fixture.lifespan.close();
      await target.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** Every walk-written row as comparable tuples, per table. */
export async function snapshotRows(
  fixture: WalkFixture,
): Promise<Record<string, { key: string; opId: string; updatedAt: string }[]>> {
  const tables: Record<string, string> = {
    source_documents: 'id::text',
    content_chunks: 'id::text',
    q_a_extractions: 'id::text',
    entity_mentions: 'id::text',
    entity_relationships: 'id::text',
    record_embeddings: "owner_kind || ':' || owner_id",
  };
  const out: Record<string, { key: string; opId: string; updatedAt: string }[]> = {};
  for (const [table, key] of Object.entries(tables)) {
    const { rows } = await fixture.target.db.query<{ key: string; op_id: string; updated_at: Date | string }>(
      `SELECT ${key} AS key, op_id::text AS op_id, updated_at FROM ${table} ORDER BY 1`,
    );
    out[table] = rows.map((r) => ({ key: r.key, opId: r.op_id, updatedAt: new Date(r.updated_at).toISOString() }));
  }
  return out;
}

export const markdown = (title: string, paragraphs: number): string =>
  `# ${title}\n\n${Array.from({ length: paragraphs }, (_, i) => `Paragraph ${i} of ${title}. ${'Words to fill the chunk. '.repeat(20)}`).join('\n\n')}\n`;

/** The rows an uninterrupted walk of `corpus` leaves, in content terms, from a fixture of its own. */
export async function uninterruptedRows(corpus: string): Promise<Record<string, string[]>> {
  return (await uninterruptedWalk(corpus)).rows;
}

/** The rows and the state store an uninterrupted walk of `corpus` leaves, in content terms. */
export async function uninterruptedWalk(
  corpus: string,
): Promise<{ rows: Record<string, string[]>; state: Awaited<ReturnType<typeof stateInContentTerms>> }> {
  const reference = await walkFixture();
  try {
    const clean = await walk(reference.lifespan, { sourcePath: corpus });
    if (clean.items.failed > 0 || clean.status !== 'completed')
      throw new Error(`the reference walk did not complete cleanly: ${clean.error ?? `${clean.items.failed} failed`}`);
    return {
      rows: await rowsInContentTerms(reference.target.db),
      state: await stateInContentTerms(reference.lifespan.store),
    };
  } finally {
    await reference.dispose();
  }
}
