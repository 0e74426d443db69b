// The batched UPSERT writer (docs/ARCHITECTURE.md#the-sink). Callers hand it one item's rows for a
// table and await the returned promise, which settles only once those rows are durable: that is
// what lets the walk commit an item's memo entry strictly after its rows landed.
//
// A write is one item's rows, every table at once: they land in one transaction or not at all,
// so no row (an embedding above all, whose owner has no foreign key to keep it honest) is ever
// durable without the rows it belongs with. A write may carry more work for its transaction,
// run after every table's rows (an item's stale rows deleted, its memos: engine/item/commit.ts).
//
// Rows accumulate across items and are flushed when `batchRows` rows are pending or `flushMs`
// after the first pending write. A flush writes every table in WALK_TABLES order (parents
// first) inside one transaction. If that transaction fails, each pending write is retried in a
// transaction of its own, so one bad row fails only the write (the item) that carried it.
//
// Up to `flushes` flushes run at once, each on a connection of its own, so that one item does
// not wait for another's rows (docs/DECISIONS.md "Flushes side by side"). What they share is
// ordered by key: a flush that writes a row key or a memo entry that an earlier flush still in
// flight writes starts only once that one has committed, so a later write of a key lands last
// and two of this sink's transactions never wait on each other's locks. A vector copy needs no
// such order: it reads a committed row in its statement's snapshot, and a source deleted
// meanwhile is what the serial sink met too (VectorSourceGoneError: the item embeds the text).
//
// The sink writes through the database it is given: a walk's is fenced (lib/db/fenced.ts), so
// each of its transactions first checks that the walk still holds the writer fence.

import PQueue from 'p-queue';
import type { Database, Queryable } from './database.ts';
import { isFenceLost } from './fenced.ts';
import { rowKey, WALK_TABLES, type TableRows, type TableSpec } from './tables.ts';
import { defaultStrategy, upsertRows, type UpsertStrategy } from './upsert-rows.ts';
import { metrics } from '../metrics.ts';

export interface SinkOptions {
  batchRows: number;
  flushMs: number;
  /** How many flushes may run at once (each holds a connection); by default 1, one after another. */
  flushes?: number;
  /** Force one statement shape for every table (benchmarks, tests); default: the measured one per table. */
  strategy?: UpsertStrategy;
}

/** More of an item's writes, made in the transaction of its rows once they are written. */
export type WithinRowsTransaction = (tx: Queryable) => Promise<void>;

/** Key-value entries written with an item's rows (its memo entries: engine/item/item-memos.ts). */
export interface EntriesIn {
  /** The store that writes them on the rows' transaction (lib/state/database-store.ts). */
  writer: { putMemos(tx: Queryable, entries: readonly (readonly [key: string, value: unknown])[]): Promise<void> };
  entries: readonly (readonly [key: string, value: unknown])[];
}

/** What an item's write carries besides its rows. */
export interface WriteWork {
  /**
   * Written after every write's rows, all of a flush's in one statement per store: in key order,
   * so that two processes' flushes sharing entries lock them in one order, never in a cycle.
   */
  memos?: EntriesIn | undefined;
  /** Run after the rows and the entries. */
  within?: WithinRowsTransaction | undefined;
  /** Keys `within` writes besides the rows' (the item memo's): ordered like row keys. */
  keys?: readonly string[] | undefined;
}

interface PendingWrite {
  rows: TableRows;
  work: WriteWork;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A flush started and not yet settled: the keys it writes, and its end (it never rejects). */
interface Flight {
  keys: ReadonlySet<string>;
  done: Promise<void>;
}

export class Sink {
  readonly #db: Database;
  readonly #options: SinkOptions;
  #pending: PendingWrite[] = [];
  #pendingRows = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Flushes started and not yet settled, in the order they were started. */
  readonly #flights = new Set<Flight>();
  /** The connections flushes may hold at once. */
  readonly #lanes: PQueue;
  /** Rows written per table since the sink was created (after in-batch deduplication). */
  readonly rowsWritten = new Map<string, number>();

  /** Rows queued and not yet handed to a flush. */
  get pendingRows(): number {
    return this.#pendingRows;
  }

  constructor(db: Database, options: SinkOptions) {
    this.#db = db;
    this.#options = options;
    // PGlite has one session: a second flush would only wait for the first's turn.
    this.#lanes = new PQueue({ concurrency: db.kind === 'pglite' ? 1 : (options.flushes ?? 1) });
  }

  /**
   * Queues one item's rows, and the work for their transaction; resolves when all is durable,
   * rejects (nothing written) with the error that kept it out.
   */
  write(rows: TableRows, work: WriteWork = {}): Promise<void> {
    const foreign = [...rows.keys()].find((spec) => !WALK_TABLES.includes(spec));
    if (foreign !== undefined) return Promise.reject(new Error(`the sink does not write table ${foreign.name}`));
    const count = [...rows.values()].reduce((n, list) => n + list.length, 0);
    if (count === 0 && work.memos === undefined && work.within === undefined) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => this.#pending.push({ rows, work, resolve, reject }));
    this.#pendingRows += count;
    if (this.#pendingRows >= this.#options.batchRows) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), this.#options.flushMs);
    return done;
  }

  /** Writes everything queued so far; resolves when it is durable (individual writes may have failed). */
  flush(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#pending;
    this.#pending = [];
    this.#pendingRows = 0;
    if (batch.length === 0) return Promise.resolve();
    const keys = keysOf(batch);
    // Every earlier flight sharing a key commits first: a later write of a key lands last.
    const earlier = [...this.#flights].filter((flight) => shareAny(flight.keys, keys)).map((flight) => flight.done);
    const done = Promise.all(earlier).then(() => this.#lanes.add(() => this.#writeBatch(batch)));
    const flight = { keys, done };
    this.#flights.add(flight);
    void done.then(() => this.#flights.delete(flight));
    return done;
  }

  /** Flushes what is queued and waits for every flush in flight. */
  async close(): Promise<void> {
    await this.flush();
    await Promise.all([...this.#flights].map((flight) => flight.done));
  }

  async #writeBatch(batch: PendingWrite[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      await this.#writeInOneTransaction(batch);
      for (const write of batch) write.resolve();
    } catch (error) {
      // A lost writer fence refuses every write alike (lib/db/fenced.ts): none is tried alone.
      if (isFenceLost(error)) {
        for (const write of batch) write.reject(error);
        return;
      }
      for (const write of batch) {
        await this.#writeInOneTransaction([write]).then(write.resolve, write.reject);
      }
    }
  }

  /** The writes' rows, table by table in WALK_TABLES order, then their own work; counted only once committed. */
  async #writeInOneTransaction(writes: readonly PendingWrite[]): Promise<void> {
    const counts = await this.#db.transaction(async (tx) => {
      const written = new Map<string, number>();
      for (const spec of WALK_TABLES) {
        const rows = writes.flatMap((w) => w.rows.get(spec) ?? []);
        if (rows.length === 0) continue;
        const n = await upsertRows(tx, spec, rows, this.#strategyFor(spec));
        // Rows merged into ones already written were counted then.
        if (spec.merge === undefined) written.set(spec.name, n);
      }
      await writeEntries(tx, writes);
      for (const write of writes) await write.work.within?.(tx);
      return written;
    });
    for (const [table, n] of counts) this.#count(table, n);
  }

  #strategyFor(spec: TableSpec): UpsertStrategy {
    return this.#options.strategy ?? defaultStrategy(this.#db.kind, spec);
  }

  #count(table: string, n: number): void {
    metrics.sinkRows.inc({ table }, n);
    this.rowsWritten.set(table, (this.rowsWritten.get(table) ?? 0) + n);
  }
}

/** Every key the writes write: their rows' by table, their memo entries', their work's own. */
function keysOf(writes: readonly PendingWrite[]): Set<string> {
  const keys = new Set<string>();
  for (const { rows, work } of writes) {
    for (const [spec, list] of rows) for (const row of list) keys.add(`${spec.name}\u0000${rowKey(spec, row)}`);
    for (const [key] of work.memos?.entries ?? []) keys.add(`memo\u0000${key}`);
    for (const key of work.keys ?? []) keys.add(key);
  }
  return keys;
}

function shareAny(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const key of small) if (large.has(key)) return true;
  return false;
}

/** The writes' entries, one statement per store that writes them. */
async function writeEntries(tx: Queryable, writes: readonly PendingWrite[]): Promise<void> {
  const byWriter = new Map<EntriesIn['writer'], (readonly [string, unknown])[]>();
  for (const { work } of writes) {
    if (work.memos === undefined) continue;
    const list = byWriter.get(work.memos.writer) ?? [];
    list.push(...work.memos.entries);
    byWriter.set(work.memos.writer, list);
  }
  for (const [writer, entries] of byWriter) await writer.putMemos(tx, entries);
}
