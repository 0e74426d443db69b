// A database that writes only while its walk holds the writer fence
// (docs/behaviour/states.md#writer-fence-and-single-flight). Every transaction begins with the
// guard's check, inside that transaction: on PostgreSQL a read of the fence's lease row FOR SHARE
// with the walk's fencing token (lib/db/lease-row.ts). A walk whose lease passed to another walk
// finds no such row, and its transaction fails with FenceLostError before it wrote anything; a
// takeover waits for the transactions that already checked to commit, so none of them can land
// after the next walk began. A statement outside a transaction that may write is run as a
// transaction of its own, so the few single-statement writes of a walk (stale keys deleted, the
// engine instance row, the cleanup's deletes) are fenced too; reads go straight through.

import type { Database, Queryable, QueryResult } from './database.ts';
import { IngestError } from '../errors.ts';

/** The walk no longer holds the writer fence: another walk took it over. */
export class FenceLostError extends IngestError {
  constructor(detail: string) {
    super(
      'fence_lost',
      `fence_lost: the writer fence passed to another walk (${detail}); this walk wrote nothing after that and ` +
        'stopped; the items it had not committed are redone by the next walk',
    );
  }
}

/** True when the error, or one it was caused by, is a lost fence (an item's failure wraps it). */
export function isFenceLost(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof FenceLostError) return true;
  return false;
}

export interface WriteGuard {
  /** Throws FenceLostError unless the fence is still this walk's; runs inside the writing transaction. */
  check(tx: Queryable): Promise<void>;
}

/**
 * A statement that only reads: a SELECT, or a WITH that names no data-modifying verb anywhere
 * (one that does, even in a literal, is fenced: a needless check costs a round trip, a missed
 * one a row landed after a takeover).
 */
const READS = /^\s*(?:SELECT|WITH)\b/i;
const MODIFIES = /\b(?:INSERT|UPDATE|DELETE|MERGE|COPY)\b/i;
const readOnly = (sql: string): boolean => READS.test(sql) && !MODIFIES.test(sql);

export class FencedDatabase implements Database {
  readonly #db: Database;
  readonly #guard: WriteGuard;

  constructor(db: Database, guard: WriteGuard) {
    this.#db = db;
    this.#guard = guard;
  }

  get kind(): Database['kind'] {
    return this.#db.kind;
  }

  get location(): string {
    return this.#db.location;
  }

  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    if (readOnly(sql)) return this.#db.query<R>(sql, params);
    return this.transaction((tx) => tx.query<R>(sql, params));
  }

  exec(sql: string): Promise<void> {
    return this.transaction((tx) => tx.exec(sql));
  }

  copyIn(table: string, columns: readonly string[], data: string | Uint8Array): Promise<void> {
    return this.transaction((tx) => tx.copyIn(table, columns, data));
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#db.transaction(async (tx) => {
      await this.#guard.check(tx);
      return fn(tx);
    });
  }

  /** The database is lent by the walk's lifespan, which closes it. */
  async close(): Promise<void> {}
}
