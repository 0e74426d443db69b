// What a walk reads of the engine's lifespan (engine/lifespan.ts opens it): declared here, below
// the lifespan, so that the rooms of engine/ point one way. The lifespan is built of the walk's
// parts (its passes, its lock) and extends this; the walk's modules never import it back, nor
// the producer, whose one use here is a clean walk asking it for a run.

import type { AliasSnapshot } from '../../lib/aliases.ts';
import type { Config } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import type { Logger } from '../../lib/log.ts';
import type { Models } from '../../lib/models.ts';
import type { RunRecorder } from '../../lib/runs/record.ts';
import type { StateStore } from '../../lib/state/store.ts';
import type { Converter } from '../../stages/convert/index.ts';
import type { FlowPass } from './passes.ts';
import type { ItemCounts } from './tally.ts';
import type { WalkLock } from './walk-lock.ts';

/** What a clean walk asks of the producer (engine/producer/producer.ts Producer.chainAfter). */
export interface ProducerChain {
  chainAfter(summary: { opId: string; status: 'completed' | 'failed'; items: ItemCounts }): void;
}

export interface WalkLifespan {
  readonly config: Config;
  readonly db: Database;
  readonly store: StateStore;
  readonly log: Logger;
  readonly converter: Converter;
  readonly models: Models;
  readonly runs: RunRecorder;
  readonly aliases: AliasSnapshot;
  /** Flow-scope passes run before the backlink reconciliation and the cleanup (engine/walk/passes.ts). */
  readonly passes: readonly FlowPass[];
  /** Chained after clean walks (the lifespan's knowledge-bundle producer). */
  readonly producer: ProducerChain;
  /** One walk at a time on this lifespan, refused rather than queued (engine/walk/walk.ts). */
  readonly walkLock: WalkLock;
}
