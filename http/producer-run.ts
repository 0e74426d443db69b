// POST /producer-run (docs/behaviour/routes.md#post-producer-run): a producer run over every
// concept, bypassing the post-walk delta gate, under the producer's own lock (independent of the
// walk's). The run starts on the engine thread; the answer comes once it holds its locks: 202 with
// its op_id (its pipeline_runs row, flow producer, records how it ends), or 409 while another runs.
// Body: empty, or {"redraft": true} to ask the model again even where the memo holds a draft.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EngineThread } from '../engine/thread-handle.ts';
import { readBooleanFields } from './body.ts';
import { HttpError, sendJson } from './errors.ts';

/** The body's fields (body field -> flag); anything else is refused by name. */
export const PRODUCER_RUN_FLAGS = { redraft: 'redraft' } as const;

export function producerRunRoute(engine: EngineThread) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const { redraft = false } = await readBooleanFields(req, PRODUCER_RUN_FLAGS);
    const answer = await engine.produce(redraft);
    if (answer.type === 'produce-refused')
      throw answer.busy
        ? new HttpError(409, 'producer_in_progress', answer.message)
        : new HttpError(503, 'producer_unavailable', answer.message);
    sendJson(res, 202, { op_id: answer.opId, status: 'accepted' });
  };
}
