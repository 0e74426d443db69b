// The service's Prometheus metrics (GET /metrics, docs/OPERATIONS.md "Read the metrics"). Each
// thread has its own module instance and so its own registry: in `ingest serve` the engine thread
// counts what walks, model calls, converters and the sink do, and the main thread serves its own
// process figures with the engine's text beside them. Other commands count too, unread.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
const registers = [registry];

export const metrics = {
  walks: new Counter({
    name: 'ingest_walks_total',
    help: 'Walks by terminal state (completed, failed, fence_busy).',
    labelNames: ['state'] as const,
    registers,
  }),
  items: new Counter({
    name: 'ingest_walk_items_total',
    help: 'Corpus items walked, by outcome (changed, unchanged, failed, dropped, skipped, removed).',
    labelNames: ['outcome'] as const,
    registers,
  }),
  modelCalls: new Counter({
    name: 'ingest_model_calls_total',
    help: 'Requests sent to the model endpoints (each attempt), by kind: the extractor or prompt tool, or embedding.',
    labelNames: ['kind'] as const,
    registers,
  }),
  modelRetries: new Counter({
    name: 'ingest_model_retries_total',
    help: 'Model requests retried after a 429, 5xx, overload or network error, by kind.',
    labelNames: ['kind'] as const,
    registers,
  }),
  stageSeconds: new Histogram({
    name: 'ingest_stage_duration_seconds',
    help: 'Time one item spent at one stage of its walk (admit, convert, chunk, extract, embed, ...).',
    labelNames: ['stage'] as const,
    buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 60],
    registers,
  }),
  sinkRows: new Counter({
    name: 'ingest_sink_rows_total',
    help: 'Rows the sink committed, by table.',
    labelNames: ['table'] as const,
    registers,
  }),
  converterKills: new Counter({
    name: 'ingest_converter_kills_total',
    help: 'Converter child processes ended mid-document, by reason (timeout, memory_limit, converter_crashed).',
    labelNames: ['reason'] as const,
    registers,
  }),
  walkWorkerItems: new Counter({
    name: 'ingest_walk_worker_items_total',
    help: "Items of distributed walks by the walk worker that ran them (host:pid) and outcome: a worker's items per second is its rate.",
    labelNames: ['worker', 'outcome'] as const,
    registers,
  }),
  /** Set from the engine thread's database when /metrics is scraped (engine/thread/thread.ts). */
  walkItemJobs: new Gauge({
    name: 'ingest_walk_item_jobs',
    help: "The distributed walks' queue: jobs by walk (op_id) and state (created, active, retry, completed, failed).",
    labelNames: ['walk', 'state'] as const,
    registers,
  }),
  /** Set by the statements a scrape sends (engine/thread/thread.ts). */
  databaseReachable: new Gauge({
    name: 'ingest_database_reachable',
    help: "1 when this scrape's statements reached the database, 0 when it could not be reached (database_unavailable: the server gone, or no answer within INGEST_DB_CONNECT_TIMEOUT_S / INGEST_DB_QUERY_TIMEOUT_S).",
    registers,
  }),
  /** Set from the engine thread's database when /metrics is scraped (engine/thread/thread.ts). */
  queueJobs: new Gauge({
    name: 'ingest_queue_jobs',
    help: "The bid-worker's processing_queue: jobs by kind and status (queued is the depth; done and failed the outcomes).",
    labelNames: ['job', 'status'] as const,
    registers,
  }),
};
