// The named failures of a job. A job's error column holds `<code>: <message>`, so an operator
// (and the platform) can tell a bad payload from an unreadable form or a model outage. `final`
// marks what no retry can heal (the same payload or bytes fail the same way): such a job ends
// failed at once instead of spending its remaining attempts.

import { ConversionError, type ConversionErrorCode } from '../stages/convert/index.ts';
import { IngestError } from '../lib/errors.ts';
import { EmbeddingModelChangedError } from '../lib/embed/recorded-model.ts';
import { isWrongDimensions } from '../stages/embed.ts';

/** Every code a job fails with (docs/ERRORS.md "Jobs"), besides form_unreadable/<conversion code>. */
export const JOB_ERROR_CODES = [
  'bad_payload',
  'unknown_job',
  'form_not_found',
  'form_unsupported',
  'form_not_analysed',
  'form_changed',
  'embedding_model_changed',
  'embedding_dimensions',
  'lease_lost',
  'given_back',
  'job_failed',
] as const;

export type JobErrorCode = (typeof JOB_ERROR_CODES)[number] | `form_unreadable/${ConversionErrorCode}`;

export class JobError extends IngestError {
  declare readonly code: JobErrorCode;
  readonly final: boolean;
  constructor(code: JobErrorCode, message: string, options: { final: boolean; cause?: unknown }) {
    super(code, message, { cause: options.cause });
    this.final = options.final;
  }
}

/**
 * Any error a job threw, as a JobError: a form the isolated converter refused (a bomb, a
 * corrupt or encrypted file, a timeout) is final and keeps the converter's code; anything else
 * (a model outage, a database hiccup) is worth another attempt.
 */
export function asJobError(error: unknown): JobError {
  if (error instanceof JobError) return error;
  if (error instanceof ConversionError)
    return new JobError(`form_unreadable/${error.code}`, error.message, { final: true, cause: error });
  // Every attempt would find the same model recorded, until the operator's `ingest reembed`.
  if (error instanceof EmbeddingModelChangedError)
    return new JobError('embedding_model_changed', error.message, { final: true, cause: error });
  // The served model's vectors have another length: so will the next attempt's, until the operator acts.
  if (isWrongDimensions(error))
    return new JobError('embedding_dimensions', (error as Error).message, { final: true, cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new JobError('job_failed', message, { final: false, cause: error });
}

/** The text stored in processing_queue.error. */
export const errorText = (error: JobError): string => `${error.code}: ${error.message}`;
