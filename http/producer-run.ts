// POST /producer-run (docs/behaviour/routes.md#post-producer-run): a producer run over every
// concept, bypassing the post-walk delta gate, under the producer's own lock (independent of the
// walk's). The run starts on the engine thread; the answer comes once it holds its locks: 202 with
// its op_id (its pipeline_runs row, flow producer, records how it ends), or 409 while another runs.
// Body: empty, or {"redraft": true} to ask the model again even where the memo holds a draft.

import { Type } from '@sinclair/typebox';
import { jsonBody, MAX_FLAGS_BODY } from './body.ts';
import { HttpError } from './errors.ts';
import { defineRoute } from './route.ts';
import { uuid } from './schemas.ts';

const ProducerRunRequest = Type.Object(
  {
    redraft: Type.Optional(
      Type.Boolean({ title: 'a boolean', description: 'ask the model again even where the memo holds a draft' }),
    ),
  },
  {
    $id: 'ProducerRunRequest',
    additionalProperties: false,
    description: `Optional; an empty body is the same as {}. At most ${MAX_FLAGS_BODY} bytes.`,
  },
);

const ProducerRunAccepted = Type.Object(
  {
    op_id: uuid("the run's pipeline_runs op_id (flow producer); its row records how the run ends"),
    status: Type.Literal('accepted'),
  },
  { $id: 'ProducerRunAccepted', additionalProperties: false },
);

export const producerRunRoute = defineRoute({
  method: 'POST',
  path: '/producer-run',
  operationId: 'producerRun',
  tag: 'producer',
  summary: 'Force a producer run over every concept',
  description:
    "Bypasses the post-walk delta gate. The producer has its own lock, independent of the walk's. The answer comes once the run holds its locks; the run goes on in the background and its pipeline_runs row (flow producer) records how it ends.",
  auth: 'trigger',
  rateLimit: 'producerRun',
  body: jsonBody(ProducerRunRequest, { maxBytes: MAX_FLAGS_BODY, required: false }),
  answers: { 202: { description: 'started', schema: ProducerRunAccepted } },
  refusals: [
    { status: 409, error: 'producer_in_progress', when: 'another producer run holds the lock' },
    {
      status: 503,
      error: 'producer_unavailable',
      when: 'the run could not start (the engine worker is not running, or the producer failed to open)',
    },
  ],
  handler:
    ({ engine }) =>
    async ({ body, send }) => {
      const answer = await engine.produce(body.redraft ?? false);
      if (answer.type === 'produce-refused')
        throw answer.busy
          ? new HttpError(409, 'producer_in_progress', answer.message)
          : new HttpError(503, 'producer_unavailable', answer.message);
      send(202, { op_id: answer.opId, status: 'accepted' });
    },
});
