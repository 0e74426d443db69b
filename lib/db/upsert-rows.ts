// Bulk UPSERT of rows into one table: INSERT ... ON CONFLICT (key) DO UPDATE, row-only writes.
//
// Five statement shapes are implemented because the fastest differs by engine and by row
// kind; bench/sink-strategies.ts measures them side by side and MEASURED_STRATEGY holds the
// measured winner per engine (figures in bench/README.md):
//   values      - multi-row INSERT ... VALUES ($1, $2, ...), (...), bounded by the 65,535 parameters
//   unnest      - INSERT ... SELECT FROM unnest($1::text[], ...), one array parameter per column
//   copy        - COPY (text format) into a session temp table, then INSERT ... SELECT ... ON CONFLICT
//   binary      - the same through COPY ... (FORMAT binary): no value is printed or parsed as text
//   binary-bind - unnest with every column bound as one binary array parameter (vector[],
//                 uuid[], text[], ...): no value is printed, escaped or parsed as text, and no
//                 staging copy (PostgreSQL only: PGlite cannot bind binary parameters)
// On a key already held, every other column takes the new value, unless a ConflictMerge names
// the columns to update and how (stage 5's moves keep the better of two rows). A table's pinned
// rows (TableSpec.pinned) are never updated, whatever the merge.
// A batch that holds one key twice would fail ("cannot affect row a second time"), so rows are
// deduplicated first, the last one winning.

import { toSql as vectorToSql } from 'pgvector';
import { BINARY_ELEMENT_OIDS, encodeBinaryArray, encodeCopyBinary } from './copy-binary.ts';
import { quoteIdent, type Database, type DatabaseKind, type Queryable } from './database.ts';
import {
  rowKey,
  VectorCopy,
  type Column,
  type ColumnType,
  type ConflictMerge,
  type Row,
  type TableSpec,
} from './tables.ts';
import { IngestError } from '../errors.ts';

export type UpsertStrategy = 'values' | 'unnest' | 'copy' | 'binary' | 'binary-bind';
export const UPSERT_STRATEGIES: readonly UpsertStrategy[] = ['values', 'unnest', 'copy', 'binary', 'binary-bind'];

/** The shapes an engine can run: PGlite hands a binary parameter to the type's text input. */
export function strategiesFor(kind: DatabaseKind): readonly UpsertStrategy[] {
  return kind === 'pglite' ? UPSERT_STRATEGIES.filter((s) => s !== 'binary-bind') : UPSERT_STRATEGIES;
}

/**
 * The measured winner per engine and row kind (bench/README.md, "Sink"). Rows
 * with a vector column are a different workload: parsing 1,024 floats dominates, and large
 * text[] parameters make unnest the slowest shape for them. On PostgreSQL, unnest's text[]
 * parameters travel in binary anyway (lib/db/array-params.ts), so text rows keep it: binary-bind
 * measured no faster for them (bench/README.md "CPU per document").
 */
const MEASURED_STRATEGY: Readonly<Record<DatabaseKind, { text: UpsertStrategy; vector: UpsertStrategy }>> =
  Object.freeze({
    pglite: { text: 'unnest', vector: 'binary' },
    postgres: { text: 'unnest', vector: 'binary-bind' },
  });

export function defaultStrategy(kind: DatabaseKind, spec: TableSpec): UpsertStrategy {
  const rowKind = spec.columns.some((c) => c.type === 'vector') ? 'vector' : 'text';
  return MEASURED_STRATEGY[kind][rowKind];
}

const MAX_PARAMETERS = 65_535;

export class UnknownColumnError extends IngestError {
  constructor(table: string, column: string) {
    super('unknown_column', `table ${table} has no column ${column} the sink knows of`);
  }
}

/** Keeps the last row for each key, in first-seen key order. */
export function dedupeByKey(spec: TableSpec, rows: readonly Row[]): Row[] {
  const byKey = new Map<string, Row>();
  for (const row of rows) byKey.set(rowKey(spec, row), row);
  return [...byKey.values()];
}

/** A row's vector was to be copied from another row, and no row holds that vector any more. */
export class VectorSourceGoneError extends IngestError {
  constructor(table: string, missing: number) {
    super(
      'vector_source_gone',
      `${missing} ${table} rows were to copy a vector that no row holds any more (deleted meanwhile)`,
    );
  }
}

/**
 * Upserts rows (deduplicated by key) and returns how many distinct rows were written. Rows
 * whose vector is a VectorCopy are written after the others, so that they can copy from them.
 */
export async function upsertRows(
  db: Queryable,
  spec: TableSpec,
  rows: readonly Row[],
  strategy: UpsertStrategy,
  merge?: ConflictMerge,
): Promise<number> {
  if (rows.length === 0) return 0;
  checkColumns(spec, rows);
  const onConflict = merge ?? spec.merge;
  if (onConflict !== undefined) checkColumns(spec, [onConflict]);
  const conflict = conflictClause(spec, onConflict);
  const unique = dedupeByKey(spec, rows);
  const copies = unique.filter((row) => isCopy(spec, row));
  const plain = copies.length === 0 ? unique : unique.filter((row) => !isCopy(spec, row));
  await upsertWith(db, spec, plain, strategy, conflict);
  if (copies.length > 0) await upsertCopies(db, spec, copies, conflict, strategy === 'binary-bind');
  return unique.length;
}

const vectorColumn = (spec: TableSpec) => spec.columns.find((c) => c.type === 'vector');

function isCopy(spec: TableSpec, row: Row): boolean {
  const vector = vectorColumn(spec);
  return vector !== undefined && row[vector.name] instanceof VectorCopy;
}

async function upsertWith(
  db: Queryable,
  spec: TableSpec,
  unique: readonly Row[],
  strategy: UpsertStrategy,
  conflict: string,
) {
  if (unique.length === 0) return;
  switch (strategy) {
    case 'values':
      for (const batch of chunk(unique, Math.floor(MAX_PARAMETERS / spec.columns.length))) {
        await upsertValues(db, spec, batch, conflict);
      }
      break;
    case 'unnest':
      await upsertUnnest(db, spec, unique, conflict, null);
      break;
    case 'copy':
      await upsertStaged(db, spec, copyPayload(spec, unique, 'text'), conflict);
      break;
    case 'binary':
      await upsertStaged(db, spec, copyPayload(spec, unique, 'binary'), conflict);
      break;
    case 'binary-bind':
      await upsertUnnest(db, spec, unique, conflict, {
        vectorOid: vectorColumn(spec) === undefined ? null : await vectorOid(db),
      });
      break;
  }
}

/** Rows whose vector is copied, inside the database, from a row matching them on spec.vectorSource. */
async function upsertCopies(
  db: Queryable,
  spec: TableSpec,
  rows: readonly Row[],
  conflict: string,
  binary: boolean,
): Promise<void> {
  const vector = vectorColumn(spec)!;
  const source = spec.vectorSource;
  if (source === undefined) throw new Error(`table ${spec.name} has no vectorSource: its vectors cannot be copied`);
  const others = spec.columns.filter((c) => c !== vector);
  const columns = unnestColumns(spec.name, others, rows, binary ? { vectorOid: null } : null);
  const value = (name: string) => columns.values[others.findIndex((c) => c.name === name)]!;
  const select = spec.columns.map((c) => (c === vector ? 'src.v' : value(c.name))).join(', ');
  const match = source.map((name) => `${quoteIdent(name)} = ${value(name)}`).join(' AND ');
  const { rows: written } = await db.query(
    `INSERT INTO ${quoteIdent(spec.name)} (${columnList(spec)})
     SELECT ${select} FROM ${columns.unnest}
     CROSS JOIN LATERAL (SELECT ${quoteIdent(vector.name)} AS v FROM ${quoteIdent(spec.name)} WHERE ${match} LIMIT 1) AS src
     ${conflict} RETURNING 1`,
    columns.params,
  );
  if (written.length < rows.length) throw new VectorSourceGoneError(spec.name, rows.length - written.length);
}

function checkColumns(spec: TableSpec, rows: readonly Row[]): void {
  const known = new Set(spec.columns.map((c) => c.name));
  for (const row of rows) {
    for (const name of Object.keys(row)) if (!known.has(name)) throw new UnknownColumnError(spec.name, name);
  }
}

function conflictClause(spec: TableSpec, merge: ConflictMerge | undefined): string {
  const updates =
    merge === undefined
      ? spec.columns
          .filter((c) => !spec.key.includes(c.name))
          .map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`)
      : Object.entries(merge).map(([column, value]) => `${quoteIdent(column)} = ${value}`);
  updates.push('"updated_at" = now()');
  const keepPinned = spec.pinned === undefined ? '' : ` WHERE NOT (${spec.pinned})`;
  return `ON CONFLICT (${spec.key.map(quoteIdent).join(', ')}) DO UPDATE SET ${updates.join(', ')}${keepPinned}`;
}

function columnList(spec: TableSpec): string {
  return spec.columns.map((c) => quoteIdent(c.name)).join(', ');
}

/** A value in the text form PostgreSQL parses for the column's type; null stays null. */
function encode(type: ColumnType, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'jsonb':
      return JSON.stringify(value);
    case 'vector':
      return vectorToSql(Array.from(value as ArrayLike<number>));
    case 'timestamptz':
      return value instanceof Date ? value.toISOString() : String(value);
    default:
      return String(value);
  }
}

function cast(column: Column): string {
  return column.type === 'vector' ? 'vector' : column.type;
}

async function upsertValues(db: Queryable, spec: TableSpec, rows: readonly Row[], conflict: string): Promise<void> {
  const params: (string | null)[] = [];
  const tuples = rows.map((row) => {
    const placeholders = spec.columns.map((column) => {
      params.push(encode(column.type, row[column.name]));
      return `$${params.length}::${cast(column)}`;
    });
    return `(${placeholders.join(', ')})`;
  });
  await db.query(
    `INSERT INTO ${quoteIdent(spec.name)} (${columnList(spec)}) VALUES ${tuples.join(', ')} ${conflict}`,
    params,
  );
}

/** Binding in binary (PostgreSQL), with pgvector's oid when the columns hold a vector. */
interface BinaryBind {
  vectorOid: number | null;
}

/** Columns as the arrays unnest reads: the parameters, the FROM clause, each column's value. */
interface UnnestColumns {
  params: unknown[];
  /** `unnest($1::type[], ...) AS u(c0, ...)` */
  unnest: string;
  /** Each column's value in the SELECT, in the columns' order. */
  values: string[];
}

/**
 * Every column travels as text[] and is cast per element (`$n::vector[]` fails on PGlite), unless
 * `binary`: then each column whose type has an exact binary form (BINARY_ELEMENT_OIDS, and
 * vectors given pgvector's oid) is bound as a binary array of its own type, which needs no cast.
 * pg sends a Buffer parameter in binary, but has no binary serializer for arrays: its arrays
 * are text literals (every value escaped and quoted), which is what this spares, on the walk's
 * process and in the server's parse.
 */
function unnestColumns(
  table: string,
  columns: readonly Column[],
  rows: readonly Row[],
  binary: BinaryBind | null,
): UnnestColumns {
  const oids = columns.map((column) =>
    binary === null
      ? undefined
      : column.type === 'vector'
        ? (binary.vectorOid ?? undefined)
        : BINARY_ELEMENT_OIDS[column.type],
  );
  const aliases = columns.map((_, i) => `c${i}`);
  const params = columns.map((column, i) => {
    const values = rows.map((row) => row[column.name]);
    const oid = oids[i];
    return oid === undefined
      ? values.map((v) => encode(column.type, v))
      : encodeBinaryArray(table, column, oid, values);
  });
  const arrays = columns.map((column, i) => `$${i + 1}::${oids[i] === undefined ? 'text' : cast(column)}[]`);
  return {
    params,
    unnest: `unnest(${arrays.join(', ')}) AS u(${aliases.join(', ')})`,
    values: columns.map((column, i) => (oids[i] === undefined ? `${aliases[i]}::${cast(column)}` : aliases[i]!)),
  };
}

async function upsertUnnest(
  db: Queryable,
  spec: TableSpec,
  rows: readonly Row[],
  conflict: string,
  binary: BinaryBind | null,
): Promise<void> {
  const columns = unnestColumns(spec.name, spec.columns, rows, binary);
  await db.query(
    `INSERT INTO ${quoteIdent(spec.name)} (${columnList(spec)}) SELECT ${columns.values.join(', ')} FROM ${columns.unnest} ${conflict}`,
    columns.params,
  );
}

/** pgvector's type oid in this database: a binary array names its element type by oid. */
async function vectorOid(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ oid: number }>(`SELECT 'vector'::regtype::oid AS oid`);
  return Number(rows[0]!.oid);
}

/** The rows as COPY data for `db.copyIn`, in the spec's column order. */
export function copyPayload(spec: TableSpec, rows: readonly Row[], format: 'text' | 'binary'): string | Buffer {
  if (format === 'binary') return encodeCopyBinary(spec.name, spec.columns, rows);
  const lines = rows.map((row) =>
    spec.columns.map((column) => copyField(encode(column.type, row[column.name]))).join('\t'),
  );
  return `${lines.join('\n')}\n`;
}

/** COPY `data` (text or binary format) into a session staging table, then upsert from it. */
async function upsertStaged(
  db: Queryable | Database,
  spec: TableSpec,
  data: string | Uint8Array,
  conflict: string,
): Promise<void> {
  // The staging table lives in the session and is emptied at commit, so COPY and INSERT must
  // share one transaction (and, on a pool, one connection).
  // INCLUDING STORAGE keeps vectors inline in staging as in the target (schema/0006), instead
  // of writing each one to the staging table's TOAST table and reading it back.
  if ('transaction' in db) return db.transaction((tx) => upsertStaged(tx, spec, data, conflict));
  const staging = `ingest_stage_${spec.name}`;
  await db.exec(
    `CREATE TEMP TABLE IF NOT EXISTS ${quoteIdent(staging)} (LIKE ${quoteIdent(spec.name)} INCLUDING DEFAULTS INCLUDING STORAGE) ON COMMIT DELETE ROWS`,
  );
  await db.copyIn(
    staging,
    spec.columns.map((c) => c.name),
    data,
  );
  await db.query(
    `INSERT INTO ${quoteIdent(spec.name)} (${columnList(spec)}) SELECT ${columnList(spec)} FROM ${quoteIdent(staging)} ${conflict}`,
  );
}

/** One field of COPY's text format. */
function copyField(value: string | null): string {
  if (value === null) return '\\N';
  return value.replace(/[\\\t\n\r]/g, (ch) =>
    ch === '\\' ? '\\\\' : ch === '\t' ? '\\t' : ch === '\n' ? '\\n' : '\\r',
  );
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
