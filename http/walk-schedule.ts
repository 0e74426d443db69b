// The scheduled walk (docs/behaviour/stages.md#boot-never-walks): on INGEST_WALK_SCHEDULE (a cron
// expression, read in UTC) the sidecar calls its own POST /walk on loopback with the trigger
// bearer, exactly as the platform would, so a scheduled walk takes the same fence, registry and
// single-flight. A tick that finds a walk running gets 409: it is logged and skipped, never queued
// up behind it.

import { Cron } from 'croner';
import type { Logger } from '../lib/log.ts';

export interface WalkSchedule {
  stop(): void;
}

export function scheduleWalks(expression: string, walkUrl: string, secret: string, log: Logger): WalkSchedule {
  const tick = async () => {
    try {
      const response = await fetch(walkUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: '{}',
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await response.json().catch(() => ({}))) as { requestId?: string; error?: string };
      if (response.status === 202) log.info({ requestId: body.requestId }, 'scheduled walk started');
      else if (response.status === 409) log.info({ reason: body.error }, 'scheduled walk skipped: a walk is running');
      else log.warn({ status: response.status, reason: body.error }, 'scheduled walk refused');
    } catch (error) {
      log.warn({ err: error }, 'scheduled walk could not reach the sidecar');
    }
  };
  const job = new Cron(expression, { mode: '5-or-6-parts', timezone: 'UTC' }, tick);
  log.info({ schedule: expression, next: job.nextRun()?.toISOString() }, 'walks scheduled');
  return { stop: () => job.stop() };
}
