// Stage-5 passes stopped at chosen boundaries, for the resumption tests (test/resolve-resume,
// test/qa-dedup-resume): fresh deployments, real `ingest walk` processes (killed on a log line
// if asked), and faults the database itself raises at a statement's nth execution.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { loadConfig } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import { openDatabase } from '../../lib/db/open.ts';
import { BIN } from './corpus.ts';
import { openTestDatabase, type TestDatabase } from './db.ts';
import { seedDataDir } from './embedded.ts';

export const POSTGRES = process.env.ENGINE_DB_DSN !== undefined && process.env.ENGINE_DB_DSN !== '';

/** A log line of the walk, as pino writes it. */
export type LogLine = { msg?: string; batch?: number; pass?: string };

export interface WalkSummary {
  passes: { name: string; ok: boolean; error?: string; counts?: Record<string, number> }[];
}

/** Fresh deployments (database and state store) under `root`, each walked over `corpus`. */
export class Deployments {
  readonly #root: string;
  readonly #corpus: string;
  readonly #targets: TestDatabase[] = [];

  constructor(root: string, corpus: string) {
    this.#root = root;
    this.#corpus = corpus;
  }

  async create(name: string): Promise<Record<string, string>> {
    const dataDir = path.join(this.#root, name);
    const env: Record<string, string> = {
      INGEST_DATA_DIR: dataDir,
      INGEST_LOG_LEVEL: 'debug',
      INGEST_PRODUCER_AFTER_WALK: 'false',
    };
    if (POSTGRES) {
      const target = await openTestDatabase();
      this.#targets.push(target);
      env.ENGINE_DB_DSN = target.dsn!;
    }
    await seedDataDir(dataDir);
    return env;
  }

  /**
   * Runs `ingest walk --json`. With `kill`, SIGKILLs it at the first log line `onLine` accepts,
   * or once `poll` (asked every 100 ms) says so.
   */
  walk(
    env: Record<string, string>,
    kill?: { onLine?: (line: LogLine) => boolean; poll?: () => Promise<boolean> },
  ): Promise<{ code: number | null; killed: boolean; summary: WalkSummary | null; errors: string }> {
    return new Promise((resolve, reject) => {
      // A process group of its own: the kill takes the embedded database's child process with
      // the walk, as a machine going down would, rather than leave it holding its directory.
      const child = spawn(process.execPath, [BIN, 'walk', this.#corpus, '--json'], {
        env: { PATH: process.env.PATH ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let killing = false;
      const killNow = () => {
        if (killing) return;
        killing = true;
        process.kill(-child.pid!, 'SIGKILL');
      };
      let exited = false;
      const polling = async () => {
        while (!exited && !killing) {
          if (await kill!.poll!()) killNow();
          else await new Promise((r) => setTimeout(r, 100));
        }
      };
      if (kill?.poll !== undefined) polling().catch(reject);
      let stdout = '';
      let pending = '';
      /** The log's warnings and errors, for a failure's message. */
      let errors = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          if (/"level":[56]0/.test(line) || !line.startsWith('{')) errors += `${line}\n`;
          if (kill?.onLine === undefined || killing || !line.startsWith('{')) continue;
          if (kill.onLine(JSON.parse(line) as LogLine)) killNow();
        }
      });
      child.on('error', reject);
      child.on('exit', (code) => {
        exited = true;
        resolve({
          code,
          killed: killing && code === null,
          summary: code === 0 ? (JSON.parse(stdout) as WalkSummary) : null,
          errors,
        });
      });
    });
  }

  async withDatabase<T>(env: Record<string, string>, fn: (db: Database) => Promise<T>): Promise<T> {
    const db = await openDatabase(loadConfig(env, this.#root));
    try {
      return await fn(db);
    } finally {
      await db.close();
    }
  }

  async dispose(): Promise<void> {
    for (const t of this.#targets) await t.dispose();
  }
}

/** The pass named in a walk's summary. */
export function passOf(summary: WalkSummary | null, name: string): WalkSummary['passes'][number] {
  const pass = summary?.passes.find((p) => p.name === name);
  if (pass === undefined) throw new Error(`no ${name} pass in ${JSON.stringify(summary)}`);
  return pass;
}

/** A walk's op in content terms: the first document carrying it, so that two deployments compare. `column` is qualified by its table's alias. */
export const OP = (column: string) =>
  `coalesce((SELECT min(d.rel_path) FROM source_documents d WHERE d.op_id = ${column}), 'an op no document carries')`;

/** Rows of `sql` (one text column), sorted: a table in content terms. */
export async function contentRows(db: Database, sql: string): Promise<string[]> {
  const { rows } = await db.query<{ row: string }>(`SELECT row FROM (${sql}) AS t(row) ORDER BY 1`);
  return rows.map((r) => r.row);
}

/**
 * A fault at the `at`th execution (1-based) of a statement on `table` that meets `when`: the
 * count is a sequence, which no rollback undoes. `fail` fails the statement (on PostgreSQL by
 * ending its own connection, a real cut; on the embedded database by raising); `hold` keeps it
 * waiting for ten minutes, so that a walk can be killed there.
 */
export interface Fault {
  table: string;
  event: 'INSERT' | 'DELETE';
  at: number;
  when?: string;
}

export async function installFault(db: Database, fault: Fault, action: 'fail' | 'hold'): Promise<void> {
  const act =
    action === 'fail'
      ? POSTGRES
        ? 'PERFORM pg_terminate_backend(pg_backend_pid());'
        : "RAISE EXCEPTION 'injected fault';"
      : POSTGRES
        ? 'PERFORM pg_sleep(600);'
        : // The embedded database has no other session to wait for: a loop holds its one thread.
          "LOOP EXIT WHEN clock_timestamp() > statement_timestamp() + interval '10 minutes'; END LOOP;";
  await db.exec(`
    CREATE SEQUENCE pass_fault_count;
    CREATE FUNCTION pass_fault() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (${fault.when ?? 'true'}) AND nextval('pass_fault_count') = ${fault.at} THEN ${act} END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER pass_fault BEFORE ${fault.event} ON ${fault.table}
      FOR EACH STATEMENT EXECUTE FUNCTION pass_fault();`);
}

export async function removeFault(db: Database, fault: Fault): Promise<void> {
  // A held statement of a killed walk sleeps on in its server process (nothing reads the gone
  // client during the sleep), holding its table against the DROP: it is ended first.
  if (POSTGRES) {
    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event = 'PgSleep'`,
    );
  }
  await db.exec(
    `DROP TRIGGER pass_fault ON ${fault.table}; DROP FUNCTION pass_fault(); DROP SEQUENCE pass_fault_count;`,
  );
}

/** Whether the fault's statement has reached its `at`th execution (PostgreSQL: read from another session). */
export async function faultReached(db: Database, fault: Fault): Promise<boolean> {
  const { rows } = await db.query<{ n: string; called: boolean }>(
    'SELECT last_value::text AS n, is_called AS called FROM pass_fault_count',
  );
  return rows[0]!.called && Number(rows[0]!.n) >= fault.at;
}
