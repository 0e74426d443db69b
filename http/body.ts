// Reads a request body with a hard size cap: past it the request is refused with 413 as soon
// as the cap is crossed, without buffering the rest. And the JSON bodies of the routes, read
// and checked against the route's TypeBox schema, each way of not fitting it a named 400:
// not JSON, not an object, a field the schema does not name (when it names all it takes), a
// field that does not fit its own schema ("<field> must be <the field schema's title>").

import type { IncomingMessage } from 'node:http';
import { FormatRegistry, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { HttpError } from './errors.ts';
import type { Refusal } from './refusal.ts';

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'body_too_large', `the request body is over ${maxBytes} bytes`);
}

/** The cap of the small bodies of named flags (/walk, /producer-run). */
export const MAX_FLAGS_BODY = 4096;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', (value) => UUID.test(value));

interface Field {
  readonly name: string;
  readonly required: boolean;
  readonly check: TypeCheck<TSchema>;
  /** The error name of a value that does not fit. */
  readonly error: string;
  readonly message: string;
}

/** A JSON object body as a route defines it: made by jsonBody(). */
export interface JsonBody<S extends TObject = TObject> {
  readonly kind: 'json';
  readonly schema: S;
  readonly maxBytes: number;
  /** Required: an empty body is not JSON. Optional: an empty body is {}. */
  readonly required: boolean;
  /** The fields in the schema's order, each with its compiled check. */
  readonly fields: readonly Field[];
  /** Whether a field the schema does not name is refused (additionalProperties: false) or ignored. */
  readonly closed: boolean;
}

export interface JsonBodyOptions<S extends TObject> {
  maxBytes: number;
  required: boolean;
  /** The error name of a field that does not fit, where it is not invalid_field. */
  errorNames?: Partial<Record<keyof Static<S> & string, string>>;
}

/** A route's JSON body; every field's schema needs a title, which says what the field must be. */
export function jsonBody<S extends TObject>(schema: S, options: JsonBodyOptions<S>): JsonBody<S> {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties).map(([name, property]): Field => {
    if (property.title === undefined) throw new Error(`body field ${name} has no title to name what it must be`);
    return {
      name,
      required: required.has(name),
      check: TypeCompiler.Compile(property),
      error: (options.errorNames as Record<string, string> | undefined)?.[name] ?? 'invalid_field',
      message: `${name} must be ${property.title}`,
    };
  });
  const { maxBytes } = options;
  return {
    kind: 'json',
    schema,
    maxBytes,
    required: options.required,
    fields,
    closed: schema.additionalProperties === false,
  };
}

export async function readJsonBody<S extends TObject>(req: IncomingMessage, body: JsonBody<S>): Promise<Static<S>> {
  const text = (await readBody(req, body.maxBytes)).toString('utf8');
  return checkJsonBody(body, text.trim() === '' && !body.required ? '{}' : text);
}

/** The body's text parsed and checked against its definition. */
export function checkJsonBody<S extends TObject>(body: JsonBody<S>, text: string): Static<S> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_json', 'the body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
  const object = parsed as Record<string, unknown>;
  if (body.closed) {
    const unknown = Object.keys(object).find((name) => !body.fields.some((field) => field.name === name));
    if (unknown !== undefined) {
      const known = body.fields.map((field) => field.name).join(', ');
      throw new HttpError(400, 'unknown_field', `unknown field ${unknown}; the fields are ${known}`);
    }
  }
  for (const field of body.fields) {
    const present = Object.hasOwn(object, field.name);
    if (present ? !field.check.Check(object[field.name]) : field.required)
      throw new HttpError(400, field.error, field.message);
  }
  return object as Static<S>;
}

/** The refusals of a JSON body, for the OpenAPI document. */
export function jsonBodyRefusals(body: JsonBody): Refusal[] {
  const names = body.fields.map((field) => field.name);
  const invalid = new Map<string, string[]>();
  for (const field of body.fields) invalid.set(field.error, [...(invalid.get(field.error) ?? []), field.message]);
  return [
    {
      status: 400,
      error: 'invalid_json',
      when: body.required ? 'the body is empty or not JSON' : 'the body is not JSON',
    },
    { status: 400, error: 'invalid_body', when: 'the body is JSON but not an object' },
    ...(body.closed ? [{ status: 400, error: 'unknown_field', when: `a field other than ${names.join(', ')}` }] : []),
    ...[...invalid].map(([error, messages]) => ({ status: 400, error, when: messages.join('; or ') })),
    { status: 413, error: 'body_too_large', when: `the body is over ${body.maxBytes} bytes` },
  ];
}
