// Reads a request body with a hard size cap: past it the request is refused with 413 as soon
// as the cap is crossed, without buffering the rest.

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
