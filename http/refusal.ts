// A named refusal as a route's definition lists it: the status, the error body's `error`, and
// when it is answered. The OpenAPI document groups a route's refusals by status into one
// response whose error body enumerates the names that status carries (http/openapi.ts).

export type ErrorHeader = 'Retry-After' | 'WWW-Authenticate';

export interface Refusal {
  readonly status: number;
  readonly error: string;
  readonly when: string;
  /** Headers this refusal always carries. */
  readonly headers?: readonly ErrorHeader[];
  /** The body also carries valid_modes (the /stage directive errors). */
  readonly validModes?: true;
}

/** What every route may answer: the fault nothing foresees (http/app.ts). */
export const INTERNAL: Refusal = {
  status: 500,
  error: 'internal_error',
  when: 'a fault the code does not foresee; the sidecar logged why and the message does not say',
};
