// Opens a database for one test on the engine the run targets (ENGINE_DB_DSN: PostgreSQL, else
// PGlite), each on a schema of its own. The benchmarks need the same, so it lives in bench/.

export { openTestDatabase, tableRows, targetEngine, type TestDatabase } from '../../bench/scratch-database.ts';
