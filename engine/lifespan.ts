// The engine lifespan (docs/behaviour/stages.md#lifespan): everything a walk needs, opened once
// from the configuration and kept across walks: the database pool, the entity-alias snapshot
// (generated here, refreshed by every walk), the state store, the converter pool, the model clients
// (read from the environment as it stands: whoever opens a lifespan starts tier 1 first where it
// wants one, cli/tier1.ts) and the run recorder. Opening it never walks
// (docs/behaviour/stages.md#boot-never-walks).

import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openDatabase } from '../lib/db/open.ts';
import { requireStore } from '../lib/data-dir.ts';
import { entityResolutionPass, qaDedupPass, type FlowPass } from './walk/passes.ts';
import type { Logger } from '../lib/log.ts';
import { createRunRecorder } from '../lib/runs/index.ts';
import { converterOptions, createConverter } from '../stages/convert/index.ts';
import { AliasSnapshot } from '../lib/aliases.ts';
import { createModels } from '../lib/models.ts';
import { openStateStore } from '../lib/state/store.ts';
import { DatabaseStateStore } from '../lib/state/database-store.ts';
import { Producer } from './producer/producer.ts';
import { WalkLock } from './walk/walk-lock.ts';
import type { WalkLifespan } from './walk/walk-lifespan.ts';

/** What a walk reads of it (engine/walk/walk-lifespan.ts), with the whole producer and a way to close it all. */
export interface Lifespan extends WalkLifespan {
  /** The knowledge-bundle producer: chained after clean walks, or started on request. */
  readonly producer: Producer;
  close(): Promise<void>;
}

/** `db` lends an open database (tests, benchmarks), which close() then leaves open. */
export async function openLifespan(
  config: Config,
  log: Logger,
  options: {
    /** A database the caller keeps and closes. */
    db?: Database;
    /** A database being opened already (cli/early-database.ts), which the lifespan then owns. */
    opening?: Promise<Database>;
    passes?: FlowPass[];
  } = {},
): Promise<Lifespan> {
  if (config.imageSha === null) {
    log.warn('IMAGE_SHA is not set: no run of this process will carry result.extractor_version');
  }
  if (config.stateStore === 'directory') requireStore(config, config.stateStorePath, 'engine state store');
  const db = options.db ?? (await (options.opening ?? openDatabase(config)));
  const aliases = new AliasSnapshot();
  const store = await aliases
    .refresh(db)
    .then(() => (config.stateStore === 'database' ? new DatabaseStateStore(db) : openStateStore(config.stateStorePath)))
    .catch(async (error: unknown) => {
      if (options.db === undefined) await db.close();
      throw error;
    });
  log.info({ curatedAliases: aliases.size }, 'entity-alias snapshot generated');
  // OCR readings kept in the state store: a copy walked later or elsewhere costs no OCR (stages/ocr/readings.ts).
  const converter = createConverter({ ...converterOptions(config.convert), ocrReadings: store });
  const models = createModels(config);
  const runs = createRunRecorder({
    appUrl: config.appUrl,
    pipelineTriggerSecret: config.secrets.pipelineTrigger,
    bypassToken: config.secrets.protectionBypass,
    db,
    log,
  });
  const producer = new Producer({ config, db, store, log, runs, llm: models.llm, queue: models.queue });
  return {
    config,
    db,
    store,
    log,
    converter,
    models,
    runs,
    aliases,
    passes: options.passes ?? [
      entityResolutionPass({
        store,
        model: config.models.extraction,
        queue: models.queue,
        llm: models.newLlm,
        embedder: models.newEmbedder,
        log,
      }),
      qaDedupPass(),
    ],
    producer,
    walkLock: new WalkLock(),
    async close() {
      await producer.idle();
      await converter.close();
      await store.close();
      await models.budgets.close();
      if (options.db === undefined) await db.close();
    },
  };
}
