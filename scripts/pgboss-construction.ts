// Prints the SQL that schema/0017_job_queue.sql freezes: pg-boss's own construction of schema
// `pgboss` at the pinned version (getConstructionPlans), made fit for lib/db/migrate.ts, which
// applies each schema/ file in a transaction of its own and records it per application schema.
//
//   node scripts/pgboss-construction.ts > body.sql
//
// Two changes, both mechanical: pg-boss's BEGIN/COMMIT wrapper is dropped (a COMMIT inside the
// migration's transaction would commit it halfway), and the statements run through one EXECUTE
// only when the database has no pgboss.version yet, because pgboss is one installation per
// database while schema_migrations is one per application schema (the tests' schemas, or two
// services on one database, each apply 0017). Run once when 0017 was written; an upgrade of
// pg-boss is a new migration made from getMigrationPlans, never a new run of this over 0017.

import { getConstructionPlans } from 'pg-boss';

const plans = getConstructionPlans('pgboss').trim();
const begin = 'BEGIN;';
const commit = 'COMMIT;';
if (!plans.startsWith(begin) || !plans.endsWith(commit))
  throw new Error('pg-boss construction plans are not one BEGIN ... COMMIT');
const body = plans.slice(begin.length, -commit.length).trim();
const tag = '$pgboss_construction$';
if (body.includes(tag)) throw new Error(`the construction plans use ${tag} themselves`);
process.stdout.write(
  `DO ${tag.replace('construction', 'install')}\nBEGIN\n` +
    `  IF to_regclass('pgboss.version') IS NULL THEN\n    EXECUTE ${tag}\n${body}\n${tag};\n  END IF;\nEND\n` +
    `${tag.replace('construction', 'install')};\n`,
);
