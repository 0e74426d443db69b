// How a child process of the conversion pool (pool.ts) answers: every job it is sent, one at a
// time, with its result or its failure by name (a ConversionError's code; anything else reads as
// corrupt), over IPC. The converter's child and the OCR child answer alike.

import { ConversionError } from './errors.ts';
import type { ConversionErrorCode } from './errors.ts';

export type JobReply<R> =
  { id: number; ok: true; result: R } | { id: number; ok: false; code: ConversionErrorCode; message: string };

/** Answers each job this process is sent with what `work` makes of it. */
export function answerJobs<J extends { id: number }, R>(work: (job: J) => Promise<R>): void {
  process.on('message', (job: J) => {
    void work(job)
      .then(
        (result): JobReply<R> => ({ id: job.id, ok: true, result }),
        (error: unknown): JobReply<R> => ({
          id: job.id,
          ok: false,
          code: error instanceof ConversionError ? error.code : 'corrupt',
          message: error instanceof Error ? error.message : String(error),
        }),
      )
      .then((reply) => process.send!(reply));
  });
}
