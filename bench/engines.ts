// The database engines a benchmark runs on: PGlite always, PostgreSQL when ENGINE_DB_DSN names
// one (scripts/pg-with-vector.sh sets it). A request for an engine not here ends the run.

import { pino } from 'pino';
import { openLifespan, type Lifespan } from '../engine/lifespan.ts';
import type { FlowPass } from '../engine/walk/passes.ts';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openTestDatabase, type TestDatabase } from './scratch-database.ts';

/** The engines `requested` (comma-separated) names, or every one available; exits 2 naming any missing. */
export function enginesToRun(benchmark: string, requested: string | undefined): string[] {
  const available = ['pglite', ...(process.env.ENGINE_DB_DSN ? ['postgres'] : [])];
  const engines = requested?.split(',') ?? available;
  const unavailable = engines.filter((e) => !available.includes(e));
  if (unavailable.length > 0) {
    console.error(
      `${benchmark} benchmark: no engine ${unavailable.join(', ')} here (available: ${available.join(', ')}; postgres needs ENGINE_DB_DSN)`,
    );
    process.exit(2);
  }
  return engines;
}

/** A fresh database (a schema of its own) on `engine`, as the tests open theirs. */
export async function openEngine(engine: string): Promise<TestDatabase> {
  if (engine === 'postgres') return openTestDatabase();
  // bench/scratch-database.ts picks PostgreSQL whenever ENGINE_DB_DSN is set: hide it for PGlite.
  const dsn = process.env.ENGINE_DB_DSN;
  delete process.env.ENGINE_DB_DSN;
  try {
    return await openTestDatabase();
  } finally {
    if (dsn !== undefined) process.env.ENGINE_DB_DSN = dsn;
  }
}

/**
 * The environment every benchmark of walks adds: no producer run chained after a walk, so what
 * is measured is the walk (bench/producer.ts measures the producer).
 */
export const WALKS_ONLY = { INGEST_PRODUCER_AFTER_WALK: 'false' } as const;

/** A silent lifespan over `db` with its files under `root`, walks only (the benchmarks' usual one). */
export function openBenchLifespan(root: string, db: Database, passes?: FlowPass[]): Promise<Lifespan> {
  return openLifespan(
    loadConfig({ INGEST_DATA_DIR: root, INGEST_LOG_LEVEL: 'silent', ...WALKS_ONLY }, root),
    pino({ level: 'silent' }),
    { db, ...(passes ? { passes } : {}) },
  );
}
