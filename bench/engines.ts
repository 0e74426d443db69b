// The database engines a benchmark runs on: PGlite always, PostgreSQL when ENGINE_DB_DSN names
// one (scripts/pg-with-vector.sh sets it). A request for an engine not here ends the run.

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
