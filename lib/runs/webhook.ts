// The pipeline-run webhook (docs/behaviour/events.md#pipeline-run-webhook): the run record POSTed
// to the web app at flow start and flow end, with Bearer PIPELINE_TRIGGER_SECRET. Delivery is
// bounded (attempts, per-attempt timeout, backoff with full jitter honouring Retry-After) and
// best-effort: a webhook that finally fails is logged and the walk goes on.
//
// Body (snake_case, one shape for both calls):
//   { "op_id", "flow", "status", "started_at", "finished_at", "result": { "extractor_version"?,
//     "counts", "counters", "error"? } }   (flow: "walk", or "producer" for the producer's runs)

import { withDeadline } from '../deadline.ts';
import type { Logger } from '../log.ts';
import { fullJitter, parseRetryAfter, retry, RetryGaveUp } from '../retry.ts';
import type { RunRecord, RunRecorder } from './record.ts';
import { IngestError } from '../errors.ts';

export const WEBHOOK_PATH = '/api/internal/pipeline-runs/record';

export interface WebhookRetry {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
}

export const DEFAULT_WEBHOOK_RETRY: WebhookRetry = {
  attempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  timeoutMs: 10_000,
};

export interface WebhookOptions {
  appUrl: string;
  secret: string;
  /** Sent as x-vercel-protection-bypass to clear a preview deployment's protection. */
  bypassToken: string | null;
  log: Logger;
  retry?: Partial<WebhookRetry>;
}

export function webhookUrl(appUrl: string): string {
  return `${appUrl.replace(/\/+$/, '')}${WEBHOOK_PATH}`;
}

export function webhookRunRecorder(options: WebhookOptions): RunRecorder {
  const policy = { ...DEFAULT_WEBHOOK_RETRY, ...options.retry };
  const url = webhookUrl(options.appUrl);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    authorization: `Bearer ${options.secret}`,
    ...(options.bypassToken === null ? {} : { 'x-vercel-protection-bypass': options.bypassToken }),
  };
  /** True once delivered or refused for good; false when every attempt failed. */
  const send = async (record: RunRecord): Promise<boolean> => {
    const body = JSON.stringify({
      op_id: record.opId,
      flow: record.flow ?? 'walk',
      status: record.status,
      started_at: record.startedAt,
      finished_at: record.finishedAt,
      result: record.result,
    });
    try {
      return await retry(
        async () => {
          const response = await withDeadline(policy.timeoutMs, (signal) =>
            fetch(url, { method: 'POST', headers, body, signal }),
          );
          await response.body?.cancel();
          if (response.ok) return true;
          if (response.status !== 429 && response.status < 500) {
            options.log.warn(
              { status: response.status, opId: record.opId },
              'pipeline-run webhook refused; not retried',
            );
            return true;
          }
          throw new WebhookStatus(response.status, parseRetryAfter(response.headers.get('retry-after')));
        },
        {
          attempts: policy.attempts,
          backoff: fullJitter(policy.baseDelayMs, policy.maxDelayMs),
          maxDelayMs: policy.maxDelayMs,
          retryAfterMs: (error) => (error instanceof WebhookStatus ? error.retryAfterMs : null),
        },
      );
    } catch (error) {
      if (!(error instanceof RetryGaveUp)) throw error;
      const last = error.cause as Error;
      options.log.warn(
        {
          opId: record.opId,
          status: record.status,
          attempts: error.attempts,
          reason: last.name === 'TimeoutError' ? 'timed out' : last.message,
        },
        'pipeline-run webhook failed; giving up',
      );
      return false;
    }
  };
  return {
    start: async (record) => void (await send(record)),
    finish: send,
  };
}

/** A 429 or 5xx answer, retried: Retry-After, when the receiver sent one, is the wait. */
class WebhookStatus extends IngestError {
  readonly retryAfterMs: number | null;
  constructor(status: number, retryAfterMs: number | null) {
    super('webhook_status', `HTTP ${status}`);
    this.retryAfterMs = retryAfterMs;
  }
}
