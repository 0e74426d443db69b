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
const TRAILER = -1; // an int16 field count of -1
/** PostgreSQL counts timestamps in microseconds from 2000-01-01T00:00:00Z. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const JSONB_VERSION = 1;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class CopyValueError extends IngestError {
  constructor(table: string, column: Column, value: unknown, expected: string) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
    super('copy_value_invalid', `${table}.${column.name} (${column.type}): ${shown} is not ${expected}`);
  }
}

/**
 * A binary payload written front to back into one buffer that doubles when full. Every field is
 * its int32 length, then its bytes (length -1: NULL), in both formats. One buffer per payload,
 * rather than one per field joined at the end: these payloads carry every row the walk writes,
 * and per-field buffers were a large share of its garbage (bench/README.md "CPU per document").
 */
class BinaryWriter {
  #buffer: Buffer;
  #at = 0;

  /** `expected`: the bytes the payload is likely to take, so that it seldom grows. */
  constructor(expected: number) {
    this.#buffer = Buffer.allocUnsafe(Math.max(256, expected));
  }

  #room(bytes: number): void {
    if (this.#at + bytes <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#buffer.length * 2, this.#at + bytes));
    this.#buffer.copy(grown, 0, 0, this.#at);
    this.#buffer = grown;
  }

  bytes(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.#buffer.set(bytes, this.#at);
    this.#at += bytes.length;
  }

  int16(n: number): void {
    this.#room(2);
    this.#at = this.#buffer.writeInt16BE(n, this.#at);
  }

  int32(n: number): void {
    this.#room(4);
    this.#at = this.#buffer.writeInt32BE(n, this.#at);
  }

  uint32(n: number): void {
    this.#room(4);
    this.#at = this.#buffer.writeUInt32BE(n, this.#at);
  }

  nullField(): void {
    this.int32(-1);
  }

  /** A field of fixed width whose bytes `write` puts at the offset it is given (Buffer's writeXxx). */
  fixedField(bytes: number, write: (this: Buffer, value: never, offset: number) => number, value: unknown): void {
    this.int32(bytes);
    this.#room(bytes);
    write.call(this.#buffer, value as never, this.#at);
    this.#at += bytes;
  }

  /** A field of UTF-8 text, after a version byte for jsonb. */
  textField(text: string, version?: number): void {
    const prefix = version === undefined ? 0 : 1;
    const bytes = Buffer.byteLength(text, 'utf8');
    this.int32(prefix + bytes);
    this.#room(prefix + bytes);
    if (version !== undefined) this.#buffer[this.#at] = version;
    this.#at += prefix + this.#buffer.write(text, this.#at + prefix, 'utf8');
  }

  /** A uuid's 16 bytes from its hex digits, hyphens skipped; the string was checked against UUID. */
  uuidField(uuid: string): void {
    this.int32(16);
    this.#room(16);
    let high = -1;
    for (let i = 0; i < uuid.length; i++) {
      const code = uuid.charCodeAt(i);
      if (code === 45) continue; // '-'
      const digit = code <= 57 ? code - 48 : (code | 32) - 87; // 0-9, then a-f in either case
      if (high < 0) high = digit;
      else {
        this.#buffer[this.#at++] = (high << 4) | digit;
        high = -1;
      }
    }
  }

  /**
   * pgvector's binary form: int16 dimensions, int16 unused, then big-endian float4 values: the
   * floats' native bytes copied in one piece and byte-swapped in one pass, far cheaper than a
   * writeFloatBE per element.
   */
  vectorField(floats: Float32Array): void {
    const bytes = 4 * floats.length;
    this.int32(4 + bytes);
    this.int16(floats.length);
    this.int16(0);
    this.#room(bytes);
    const body = this.#buffer.subarray(this.#at, this.#at + bytes);
    body.set(new Uint8Array(floats.buffer, floats.byteOffset, bytes));
    if (LITTLE_ENDIAN) body.swap32();
    this.#at += bytes;
  }

  /** The bytes written (a view of the buffer, whose unwritten tail goes with it). */
  done(): Buffer {
    return this.#buffer.subarray(0, this.#at);
  }
}

/**
 * About how many bytes a field of the column takes, judged by one value: the payload's buffer is
 * sized from it, so that one of vectors is not grown (and copied) a dozen times on its way.
 */
function expectedFieldBytes(column: Column, sample: unknown): number {
  if (column.type === 'vector') return 4 + 4 * ((sample as ArrayLike<number> | undefined)?.length ?? 0);
  return 16;
}

/** Writes one field of the value, or returns a string naming what was expected when it does not fit. */
type Encoder = (value: unknown, out: BinaryWriter) => string | void;

const ENCODERS: Readonly<Record<ColumnType, Encoder>> = {
  text: (v, out) => out.textField(String(v)),
  uuid: (v, out) => {
    if (typeof v !== 'string' || !UUID.test(v)) return 'a uuid';
    out.uuidField(v);
  },
  integer: (v, out) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) return 'a 32-bit integer';
    out.fixedField(4, Buffer.prototype.writeInt32BE, n);
  },
  bigint: (v, out) => {
    const n =
      typeof v === 'bigint'
        ? v
        : Number.isSafeInteger(v) || (typeof v === 'string' && /^-?\d{1,19}$/.test(v))
          ? BigInt(v as number | string)
          : null;
    if (n === null || n < -(2n ** 63n) || n >= 2n ** 63n) return 'a 64-bit integer';
    out.fixedField(8, Buffer.prototype.writeBigInt64BE, n);
  },
  real: (v, out) => {
    if (typeof v !== 'number') return 'a number';
    out.fixedField(4, Buffer.prototype.writeFloatBE, v);
  },
  boolean: (v, out) => {
    if (typeof v !== 'boolean') return 'a boolean';
    out.fixedField(1, Buffer.prototype.writeUInt8, v ? 1 : 0);
  },
  jsonb: (v, out) => out.textField(JSON.stringify(v), JSONB_VERSION),
  timestamptz: (v, out) => {
    const ms = v instanceof Date ? v.getTime() : typeof v === 'string' ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) return 'a Date or an ISO 8601 timestamp';
    out.fixedField(8, Buffer.prototype.writeBigInt64BE, BigInt(ms - POSTGRES_EPOCH_MS) * 1000n);
  },
  vector: (v, out) => {
    if (!(Array.isArray(v) || v instanceof Float32Array || v instanceof Float64Array)) return 'an array of numbers';
    const values = v as ArrayLike<unknown>;
    if (values.length > 0x7fff) return 'a vector of at most 32,767 dimensions';
    if (Array.isArray(values) && !values.every((x) => typeof x === 'number')) return 'an array of numbers';
    out.vectorField(v instanceof Float32Array ? v : Float32Array.from(values as ArrayLike<number>));
  },
};

/** The whole PGCOPY stream for `rows`, fields in `columns` order; null and undefined are NULL. */
export function encodeCopyBinary(table: string, columns: readonly Column[], rows: readonly Row[]): Buffer {
  const rowBytes = columns.reduce((sum, column) => sum + 4 + expectedFieldBytes(column, rows[0]?.[column.name]), 2);
  const out = new BinaryWriter(HEADER.length + rows.length * rowBytes + 2);
  out.bytes(HEADER);
  for (const row of rows) {
    out.int16(columns.length);
    for (const column of columns) writeField(out, table, column, row[column.name]);
  }
  out.int16(TRAILER);
  return out.done();
}

/** One field as both binary formats spell it: a length then the bytes, or length -1 for NULL. */
function writeField(out: BinaryWriter, table: string, column: Column, value: unknown): void {
  if (value === null || value === undefined) return out.nullField();
  const misfit = ENCODERS[column.type](value, out);
  if (typeof misfit === 'string') throw new CopyValueError(table, column, value, misfit);
}

/**
 * The built-in column types a binary array parameter carries exactly as their text does, by
 * their element type's oid (fixed in every database, unlike pgvector's). real and timestamptz
 * are left out: in binary a real would be rounded to float4 here instead of parsed from its
 * decimal by the server, and a timestamp cut to the milliseconds of a Date, so the stored value
 * could differ from the text path's.
 */
export const BINARY_ELEMENT_OIDS: Readonly<Partial<Record<ColumnType, number>>> = Object.freeze({
  bigint: 20,
  integer: 23,
  text: 25,
  uuid: 2950,
  jsonb: 3802,
});

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
  const out = new BinaryWriter(20 + values.length * (8 + expectedFieldBytes(column, values[0])));
  out.int32(1); // dimensions
  out.int32(values.some((v) => v === null || v === undefined) ? 1 : 0);
  out.uint32(elementOid);
  out.int32(values.length);
  out.int32(1); // lower bound
  for (const value of values) writeField(out, table, column, value);
  return out.done();
}
