// The service's errors have one base (the model: undici's lib/core/errors.js): IngestError,
// with a stable snake_case `code` that the walk's failure list, a job's error column, the API's
// error bodies and the log all carry. Every error the service throws by name extends it and
// fixes its code; docs/ERRORS.md lists them. An error that is not ours (Node's, pg's, an SDK's)
// gets its code from codeOf, the one place that decides it.

export class IngestError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** The code of a foreign error that carries none of its own. */
export const UNEXPECTED_ERROR = 'unexpected_error';

/**
 * The code of any error: ours as it stands; a foreign error's own string code, which Node (an
 * errno name: ENOENT, ECONNREFUSED; ERR_*) and pg (a SQLSTATE: 23505) keep stable; else
 * UNEXPECTED_ERROR. A class name is never a code: a minifier or a rename would change it.
 */
export function codeOf(error: unknown): string {
  if (error instanceof IngestError) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code !== '' ? code : UNEXPECTED_ERROR;
}
