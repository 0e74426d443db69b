// One walk at a time (docs/behaviour/states.md#writer-fence-and-single-flight): a second walk asked of the same
// lifespan while one runs is refused, not queued. The lock is the lifespan's, so whoever opens a
// lifespan (the sidecar's engine thread, a command) owns it; no module holds it for the process.

import { IngestError } from '../../lib/errors.ts';
import { SingleFlight } from '../../lib/single-flight.ts';

export class WalkInProgressError extends IngestError {
  constructor() {
    super('walk_in_progress', 'a walk is already running in this process');
  }
}

export class WalkLock extends SingleFlight {
  constructor() {
    super(() => new WalkInProgressError());
  }
}
