// A PostgreSQL login role that may read and write every row the service uses and create nothing:
// no CREATE on the database or on any schema. The walks, coordinators and workers of issue 43 run
// under it in the tests, so a library that would run DDL at run time (pg-boss's partitions, a rate
// limiter's table) fails there instead of in production (docs/OPERATIONS.md#the-job-queue).

import { randomBytes } from 'node:crypto';
import { openPostgres } from '../../lib/db/postgres.ts';
import { quoteIdent } from '../../lib/db/database.ts';

export interface NoCreateRole {
  /** The role's name. */
  name: string;
  /** `dsn` with this role as its user: the same database and search_path. */
  dsn: string;
  /** Drops the role and its grants. */
  dispose(): Promise<void>;
}

/** The schemas a session of `dsn` resolves names in: its search_path, then pgboss. */
async function schemasOf(dsn: string): Promise<string[]> {
  const db = await openPostgres(dsn, { max: 1 });
  try {
    const { rows } = await db.query<{ name: string }>(
      `SELECT nspname::text AS name FROM pg_namespace
        WHERE nspname = ANY(current_schemas(false)) OR nspname = 'pgboss' ORDER BY 1`,
    );
    return rows.map((r) => r.name);
  } finally {
    await db.close();
  }
}

/**
 * Creates the role on the database of `ownerDsn` (a superuser's or the schema owner's DSN, as the
 * tests' are) with USAGE on each schema of its search_path and on pgboss, DML on their tables,
 * their sequences, EXECUTE on their functions, and nothing else. Call it after the migrations:
 * grants cover the tables that exist.
 */
export async function createNoCreateRole(ownerDsn: string): Promise<NoCreateRole> {
  const name = `ingest_nocreate_${randomBytes(4).toString('hex')}`;
  const role = quoteIdent(name);
  const schemas = await schemasOf(ownerDsn);
  const owner = await openPostgres(ownerDsn, { max: 1 });
  try {
    const grants = schemas.map((s) => {
      const schema = quoteIdent(s);
      return (
        `GRANT USAGE ON SCHEMA ${schema} TO ${role};` +
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role};` +
        `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role};` +
        `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${schema} TO ${role};`
      );
    });
    await owner.exec(
      `CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;` +
        `GRANT CONNECT ON DATABASE ${quoteIdent(new URL(ownerDsn).pathname.slice(1))} TO ${role};` +
        grants.join(''),
    );
  } finally {
    await owner.close();
  }
  const url = new URL(ownerDsn);
  url.username = name;
  url.password = '';
  return {
    name,
    dsn: url.toString(),
    async dispose() {
      const admin = await openPostgres(ownerDsn, { max: 1 });
      try {
        await admin.exec(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
      } finally {
        await admin.close();
      }
    },
  };
}
