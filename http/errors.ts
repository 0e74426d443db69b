// One error body everywhere (docs/behaviour/routes.md#the-error-body): {"error":
// "<snake_case_name>", "message": "..."}, plus named extra fields where a route documents them
// (valid_modes on /stage directives).

import type { ServerResponse } from 'node:http';
import { IngestError } from '../lib/errors.ts';

/** `code` is the body's `error` name. */
export class HttpError extends IngestError {
  readonly status: number;
  readonly error: string;
  readonly extra: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    status: number,
    error: string,
    message: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(error, message);
    this.status = status;
    this.error = error;
    this.extra = extra;
    this.headers = headers;
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

export function sendError(res: ServerResponse, error: HttpError): void {
  sendJson(res, error.status, { error: error.error, message: error.message, ...error.extra }, error.headers);
}
