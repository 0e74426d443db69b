// Array parameters bound in binary on PostgreSQL. pg sends a JavaScript array as a text array
// literal, every element quoted and escaped in this process (and parsed back by the server),
// and has no binary serializer for arrays; it does send a Buffer parameter in binary. The walk's
// statements pass arrays of thousands of ids and names (`unnest($1::text[], $2::uuid[])`), and
// those literals were among the largest items of the walk's CPU profile (bench/README.md "CPU
// per document"). So an array whose type the statement itself fixes, with the same cast at
// every use of the parameter, is sent as PostgreSQL's binary array of that type. Any other array
// (no cast, another element type, an element not in its plain form) goes as pg sends it: what
// the server stores is the same either way. PGlite binds no binary parameter, and is not
// given one (lib/db/pglite.ts hands it the values).

import { BINARY_ELEMENT_OIDS, encodeBinaryArray } from './copy-binary.ts';
import type { ColumnType } from './tables.ts';

/** The casts this handles, by the name a statement spells the element type with. */
const CAST_TYPES: Readonly<Record<string, ColumnType>> = {
  text: 'text',
  uuid: 'uuid',
  int: 'integer',
  int4: 'integer',
  integer: 'integer',
  bigint: 'bigint',
  int8: 'bigint',
};

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * Whether pg's text literal and the binary array say the same of this element: a string for text
 * and uuid (pg prints any other value its own way), a uuid in a form the binary encoder reads,
 * an integer in range.
 */
const PLAIN: Readonly<Partial<Record<ColumnType, (value: unknown) => boolean>>> = {
  text: (v) => typeof v === 'string',
  uuid: (v) => typeof v === 'string' && UUID.test(v),
  integer: (v) => Number.isInteger(v) && (v as number) >= -(2 ** 31) && (v as number) < 2 ** 31,
  bigint: (v) => Number.isSafeInteger(v),
};

const PARAMETER_USE = /\$(\d+)(?:::(\w+)\[\])?/g;

/** Statements seen, with the array type each of their parameters is cast to at every use. */
const castsOf = new Map<string, ReadonlyMap<number, ColumnType>>();
/** Statements are few (their texts are built from a handful of shapes); the bound is a guard. */
const MAX_STATEMENTS = 1_000;

function arrayCasts(sql: string): ReadonlyMap<number, ColumnType> {
  const known = castsOf.get(sql);
  if (known !== undefined) return known;
  const uses = new Map<number, (ColumnType | undefined)[]>();
  for (const [, n, cast] of sql.matchAll(PARAMETER_USE)) {
    const type = cast === undefined ? undefined : CAST_TYPES[cast.toLowerCase()];
    uses.set(Number(n), [...(uses.get(Number(n)) ?? []), type]);
  }
  const casts = new Map<number, ColumnType>();
  for (const [n, types] of uses) {
    const [first] = types;
    if (first !== undefined && types.every((t) => t === first)) casts.set(n, first);
  }
  if (castsOf.size >= MAX_STATEMENTS) castsOf.clear();
  castsOf.set(sql, casts);
  return casts;
}

/** `params` with each array the statement casts to a known array type as a binary array (a Buffer). */
export function bindArraysInBinary(sql: string, params: readonly unknown[]): readonly unknown[] {
  if (!params.some((p) => Array.isArray(p) && p.length > 0)) return params;
  const casts = arrayCasts(sql);
  return params.map((value, i) => {
    const type = casts.get(i + 1);
    if (type === undefined || !Array.isArray(value) || value.length === 0) return value;
    const plain = PLAIN[type]!;
    if (!value.every((v) => v === null || v === undefined || plain(v))) return value;
    return encodeBinaryArray('parameter', { name: `$${i + 1}`, type }, BINARY_ELEMENT_OIDS[type]!, value);
  });
}
