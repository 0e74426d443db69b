// One walk at a time (docs/ARCHITECTURE.md "The walk"): a second walk asked of the same
// lifespan while one runs is refused, not queued. The lock is the lifespan's, so whoever opens a
// lifespan (the sidecar's engine thread, a command) owns it; no module holds it for the process.

import { SingleFlight } from '../lib/single-flight.ts';

export class WalkInProgressError extends Error {
  constructor() {
    super('a walk is already running in this process');
    this.name = 'WalkInProgressError';
  }
}

export class WalkLock extends SingleFlight {
  constructor() {
    super(() => new WalkInProgressError());
  }
}
