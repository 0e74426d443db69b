// Values in PostgreSQL's binary wire formats: whole rows for `COPY ... (FORMAT binary)`
// (PGCOPY), and one column as a binary array for a bind parameter (`$1::vector[]`).
//
// Vectors are why this exists: as text, every one of 1,024 floats is printed here and parsed
// by the server, which caps vector rows at a few thousand per second whatever the statement
// shape. In binary, pgvector receives raw float4s (figures in bench/README.md). The values are
// checked here, since the server cannot report a malformed field of a binary row by name.

import type { Column, ColumnType, Row } from './tables.ts';
import { IngestError } from '../errors.ts';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** Flags word and header-extension length, both zero. */
const HEADER = Buffer.concat([SIGNATURE, Buffer.alloc(8)]);
const TRAILER = Buffer.from([0xff, 0xff]);
const NULL_FIELD = Buffer.from([0xff, 0xff, 0xff, 0xff]);
/** PostgreSQL counts timestamps in microseconds from 2000-01-01T00:00:00Z. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const JSONB_VERSION = Buffer.from([1]);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class CopyValueError extends IngestError {
  constructor(table: string, column: Column, value: unknown, expected: string) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
    super('copy_value_invalid', `${table}.${column.name} (${column.type}): ${shown} is not ${expected}`);
  }
}

type Encoder = (value: unknown) => Buffer | string;

/** A field's bytes, or a string naming what was expected when the value does not fit. */
const ENCODERS: Readonly<Record<ColumnType, Encoder>> = {
  text: (v) => Buffer.from(String(v), 'utf8'),
  uuid: (v) => (typeof v === 'string' && UUID.test(v) ? Buffer.from(v.replace(/-/g, ''), 'hex') : 'a uuid'),
  integer: (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) return 'a 32-bit integer';
    const out = Buffer.allocUnsafe(4);
    out.writeInt32BE(n);
    return out;
  },
  bigint: (v) => {
    const n =
      typeof v === 'bigint'
        ? v
        : Number.isSafeInteger(v) || (typeof v === 'string' && /^-?\d{1,19}$/.test(v))
          ? BigInt(v as number | string)
          : null;
    if (n === null || n < -(2n ** 63n) || n >= 2n ** 63n) return 'a 64-bit integer';
    const out = Buffer.allocUnsafe(8);
    out.writeBigInt64BE(n);
    return out;
  },
  real: (v) => {
    if (typeof v !== 'number') return 'a number';
    const out = Buffer.allocUnsafe(4);
    out.writeFloatBE(v);
    return out;
  },
  boolean: (v) => (typeof v === 'boolean' ? Buffer.from([v ? 1 : 0]) : 'a boolean'),
  jsonb: (v) => Buffer.concat([JSONB_VERSION, Buffer.from(JSON.stringify(v), 'utf8')]),
  timestamptz: (v) => {
    const ms = v instanceof Date ? v.getTime() : typeof v === 'string' ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) return 'a Date or an ISO 8601 timestamp';
    const out = Buffer.allocUnsafe(8);
    out.writeBigInt64BE(BigInt(ms - POSTGRES_EPOCH_MS) * 1000n);
    return out;
  },
  vector: (v) => {
    if (!(Array.isArray(v) || v instanceof Float32Array || v instanceof Float64Array)) return 'an array of numbers';
    const values = v as ArrayLike<unknown>;
    if (values.length > 0x7fff) return 'a vector of at most 32,767 dimensions';
    if (Array.isArray(values) && !values.every((x) => typeof x === 'number')) return 'an array of numbers';
    // pgvector's binary form: int16 dimensions, int16 unused, then big-endian float4 values.
    // Written as a native Float32Array and byte-swapped in one pass: far cheaper than a
    // writeFloatBE per element. A buffer of its own starts aligned, so the view at 4 is too.
    const out = Buffer.allocUnsafeSlow(4 + 4 * values.length);
    out.writeInt16BE(values.length, 0);
    out.writeInt16BE(0, 2);
    new Float32Array(out.buffer, out.byteOffset + 4, values.length).set(values as ArrayLike<number>);
    if (LITTLE_ENDIAN) out.subarray(4).swap32();
    return out;
  },
};

/** The whole PGCOPY stream for `rows`, fields in `columns` order; null and undefined are NULL. */
export function encodeCopyBinary(table: string, columns: readonly Column[], rows: readonly Row[]): Buffer {
  const parts: Buffer[] = [HEADER];
  const fieldCount = Buffer.allocUnsafe(2);
  fieldCount.writeInt16BE(columns.length);
  for (const row of rows) {
    parts.push(fieldCount);
    for (const column of columns) pushField(parts, table, column, row[column.name]);
  }
  parts.push(TRAILER);
  return Buffer.concat(parts);
}

/** One field as both binary formats spell it: a length then the bytes, or length -1 for NULL. */
function pushField(parts: Buffer[], table: string, column: Column, value: unknown): void {
  if (value === null || value === undefined) {
    parts.push(NULL_FIELD);
    return;
  }
  const field = ENCODERS[column.type](value);
  if (typeof field === 'string') throw new CopyValueError(table, column, value, field);
  const length = Buffer.allocUnsafe(4);
  length.writeInt32BE(field.length);
  parts.push(length, field);
}

/**
 * One column's values as a one-dimensional array in PostgreSQL's binary array format, for a
 * bind parameter pg sends in binary (a Buffer). `elementOid` is the element type's oid, which
 * the server checks against the parameter's declared type (pgvector's differs per database).
 */
export function encodeBinaryArray(
  table: string,
  column: Column,
  elementOid: number,
  values: readonly unknown[],
): Buffer {
  const header = Buffer.allocUnsafe(20);
  header.writeInt32BE(1, 0); // dimensions
  header.writeInt32BE(values.some((v) => v === null || v === undefined) ? 1 : 0, 4);
  header.writeUInt32BE(elementOid, 8);
  header.writeInt32BE(values.length, 12);
  header.writeInt32BE(1, 16); // lower bound
  const parts: Buffer[] = [header];
  for (const value of values) pushField(parts, table, column, value);
  return Buffer.concat(parts);
}
