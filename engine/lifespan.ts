// Assembles what a walk needs from the configuration (the engine lifespan, SPEC.md 1 rule 6):
// the database, the entity-alias snapshot, the state store, the converter pool and the run
// recorder.

import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openDatabase } from '../lib/db/open.ts';
import type { FlowPass, WalkEngine } from './walk.ts';
import type { Logger } from '../lib/log.ts';
import { createRunRecorder } from '../lib/runs/index.ts';
import { createConverter } from '../stages/convert/index.ts';
import { AliasSnapshot } from '../lib/aliases.ts';
import { openModels } from './models.ts';
import { openStateStore } from '../lib/state/store.ts';

export interface OpenEngine extends WalkEngine {
  close(): Promise<void>;
}

export async function openEngine(config: Config, log: Logger, options: { db?: Database; passes?: FlowPass[] } = {}): Promise<OpenEngine> {
  const db = options.db ?? (await openDatabase(config));
  const aliases = new AliasSnapshot();
  const store = await aliases.refresh(db).then(() => openStateStore(config.stateStorePath)).catch(async (error: unknown) => {
    if (options.db === undefined) await db.close();
    throw error;
  });
  log.info({ curatedAliases: aliases.size }, 'entity-alias snapshot generated');
  const converter = createConverter({
    workers: config.convert.workers,
    timeoutMs: config.convert.timeoutMs,
    memoryMb: config.convert.memoryMb,
    maxInputBytes: config.convert.maxDocumentBytes,
    maxPages: config.convert.maxPages,
    maxCells: config.convert.maxCells,
  });
  const models = await openModels(config, log);
  const runs = createRunRecorder({
    appUrl: config.appUrl,
    pipelineTriggerSecret: config.secrets.pipelineTrigger,
    bypassToken: config.secrets.protectionBypass,
    db,
    log,
  });
  return {
    config, db, store, log, converter, models, runs, aliases,
    ...(options.passes === undefined ? {} : { passes: options.passes }),
    async close() {
      await converter.close();
      await models.close();
      await store.close();
      if (options.db === undefined) await db.close();
    },
  };
}
