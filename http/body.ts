// Reads a request body with a hard size cap: past it the request is refused with 413 as soon
// as the cap is crossed, without buffering the rest; and the small JSON bodies of the trigger
// routes, objects of named boolean fields.

import type { IncomingMessage } from 'node:http';
import { HttpError } from './errors.ts';

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

export const MAX_FLAGS_BODY = 4096;

/**
 * A body that is empty or a JSON object of boolean fields, each named in `fields` (body field ->
 * flag name); anything else is refused by name with 400.
 */
export async function readBooleanFields<F extends string>(
  req: IncomingMessage,
  fields: Readonly<Record<string, F>>,
): Promise<Partial<Record<F, boolean>>> {
  const body = (await readBody(req, MAX_FLAGS_BODY)).toString('utf8').trim();
  if (body === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HttpError(400, 'invalid_json', 'the body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
  const flags: Partial<Record<F, boolean>> = {};
  for (const [field, value] of Object.entries(parsed)) {
    if (!Object.hasOwn(fields, field)) {
      const known = Object.keys(fields).join(', ');
      throw new HttpError(400, 'unknown_field', `unknown field ${field}; the fields are ${known}`);
    }
    if (typeof value !== 'boolean') throw new HttpError(400, 'invalid_field', `${field} must be a boolean`);
    flags[fields[field]!] = value;
  }
  return flags;
}
