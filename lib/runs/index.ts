// Picks how a walk's run record is emitted: the webhook when a web app is configured, else a
// direct write into pipeline_runs (embedded mode).

import type { Database } from '../db/database.ts';
import type { Logger } from '../log.ts';
import { databaseRunRecorder, type RunRecorder } from './record.ts';
import { webhookRunRecorder, type WebhookRetry } from './webhook.ts';

export interface RunRecorderOptions {
  appUrl: string | null;
  pipelineTriggerSecret: string | null;
  bypassToken: string | null;
  db: Database;
  log: Logger;
  retry?: Partial<WebhookRetry>;
}

export function createRunRecorder(options: RunRecorderOptions): RunRecorder {
  const { appUrl, pipelineTriggerSecret, log } = options;
  if (appUrl === null) {
    return databaseRunRecorder(options.db, (phase, error) =>
      log.error({ phase, err: error }, 'could not write the pipeline_runs row'),
    );
  }
  if (pipelineTriggerSecret === null) {
    // Fail closed: the web app must never receive an unauthenticated run record.
    log.error('INGEST_APP_URL is set but PIPELINE_TRIGGER_SECRET is not: pipeline-run webhooks are not sent');
    return { start: async () => {}, finish: async () => true };
  }
  return webhookRunRecorder({
    appUrl,
    secret: pipelineTriggerSecret,
    bypassToken: options.bypassToken,
    log,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  });
}
