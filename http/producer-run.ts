// POST /producer-run (SPEC.md 4 rule 6): its own single-flight lock, independent of the walk's.
// The producer itself is not built yet, so an accepted request answers 501 with a named error.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { SingleFlight } from '../lib/single-flight.ts';
import { HttpError } from './errors.ts';

export function producerRunRoute() {
  const producing = new SingleFlight(
    () => new HttpError(409, 'producer_in_progress', 'a producer pass is already running'),
  );
  return async (_req: IncomingMessage, _res: ServerResponse): Promise<void> =>
    producing.run(async () => {
      throw new HttpError(501, 'producer_not_available', 'the knowledge-bundle producer is not part of this build yet');
    });
}
