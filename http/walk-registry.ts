// The walk registry (docs/behaviour/states.md#walk-registry-entry): bounded observability of
// accepted walks, not a ledger (pipeline_runs is the ledger). At most `capacity` entries; the
// oldest are evicted. Each accepted walk moves accepted -> running -> exactly one terminal state.

import { randomUUID } from 'node:crypto';
import type { RunWarning } from '../lib/runs/record.ts';

export type WalkState = 'accepted' | 'running' | 'completed' | 'failed' | 'fence_busy';
const TERMINAL: ReadonlySet<WalkState> = new Set(['completed', 'failed', 'fence_busy']);

export interface WalkEntry {
  requestId: string;
  state: WalkState;
  acceptedAt: string;
  finishedAt?: string;
  /** Readable once the walk completed. */
  opId?: string;
  /** The failStage5 mode stage 5 ran under, when it ran. */
  stage5FailureInjected?: string;
  /** The failStage5 mode this walk consumed, whether or not stage 5 ran (a fence_busy walk consumes it too). */
  stage5DirectiveConsumed?: string;
  counts?: Record<string, number>;
  /** Named warnings of a walk that completed (a refused mass removal). */
  warnings?: RunWarning[];
}

export const REGISTRY_CAPACITY = 50;

export class WalkRegistry {
  readonly #entries = new Map<string, WalkEntry>();
  readonly #capacity: number;

  constructor(capacity = REGISTRY_CAPACITY) {
    this.#capacity = capacity;
  }

  accept(): WalkEntry {
    const entry: WalkEntry = { requestId: randomUUID(), state: 'accepted', acceptedAt: new Date().toISOString() };
    this.#entries.set(entry.requestId, entry);
    // Map iteration is insertion order: the first key is the oldest.
    while (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
    return entry;
  }

  get(requestId: string): WalkEntry | undefined {
    const entry = this.#entries.get(requestId);
    return entry === undefined ? undefined : { ...entry };
  }

  start(requestId: string): void {
    this.#move(requestId, 'running', (e) => e.state === 'accepted');
  }

  finish(
    requestId: string,
    state: 'completed' | 'failed' | 'fence_busy',
    details: Partial<
      Pick<WalkEntry, 'opId' | 'stage5FailureInjected' | 'stage5DirectiveConsumed' | 'counts' | 'warnings'>
    > = {},
  ): void {
    this.#move(requestId, state, (e) => !TERMINAL.has(e.state), details);
  }

  #move(
    requestId: string,
    state: WalkState,
    allowed: (entry: WalkEntry) => boolean,
    details: Partial<WalkEntry> = {},
  ): void {
    const entry = this.#entries.get(requestId);
    if (entry === undefined) return; // evicted meanwhile: the registry is observability only
    if (!allowed(entry)) throw new Error(`walk ${requestId} cannot move from ${entry.state} to ${state}`);
    Object.assign(entry, details, { state }, TERMINAL.has(state) ? { finishedAt: new Date().toISOString() } : {});
  }
}
