// The one place that reads the service's environment. Every variable is parsed through the
// table of lib/config-table.ts (which also gives README.md its environment table) and shaped here
// into a typed, frozen object, whose type is this shape's; a malformed value is reported with its
// variable name (never its value, which may be a secret) and all problems are reported at once.
//
// The model-client factories are the one exception to "nothing else reads process.env": the
// SDKs must read their variables at construction (docs/behaviour/tiers.md#environment-names).

import path from 'node:path';
import { parseSettings, VARIABLES, type LogLevel, type Settings, type Variable } from './config-table.ts';
import { IngestError } from './errors.ts';

export { cronProblem, DEFAULT_EXTRACTION_MODEL, DEFAULT_PORT, type LogLevel } from './config-table.ts';

/** The variables holding credentials, as the table marks them: their values never reach a log line or an error. */
export const SECRET_ENV_VARS: readonly string[] = Object.freeze(
  Object.entries(VARIABLES as Record<string, Variable<unknown>>).flatMap(([name, variable]) =>
    variable.secret === true ? [name] : [],
  ),
);

export class ConfigError extends IngestError {
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super('invalid_config', `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

type DeepReadonly<T> = T extends (infer I)[]
  ? readonly DeepReadonly<I>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** The service's configuration: the settings, shaped by what uses them. */
export type Config = DeepReadonly<ReturnType<typeof shape>>;

/** Parses the environment into a frozen Config, or throws one ConfigError naming every problem. */
export function loadConfig(
  env: Env = process.env,
  cwd: string = process.cwd(),
  { mayCreateDataDir = true }: { mayCreateDataDir?: boolean } = {},
): Config {
  const problems: string[] = [];
  const settings = parseSettings(env, problems);
  if (settings.INGEST_WALK_SCHEDULE !== null && settings.PIPELINE_TRIGGER_SECRET === null)
    problems.push('INGEST_WALK_SCHEDULE needs PIPELINE_TRIGGER_SECRET: the scheduled walk calls POST /walk with it');
  if (settings.INGEST_WALK_MODE === 'distributed') {
    // Every worker must reach the rows, the memo and the queue: all three live in PostgreSQL.
    if (settings.ENGINE_DB_DSN === null)
      problems.push(
        'INGEST_WALK_MODE=distributed needs ENGINE_DB_DSN: the job queue and the shared memo live in PostgreSQL',
      );
    if (settings.INGEST_STATE_STORE !== 'database')
      problems.push(
        'INGEST_WALK_MODE=distributed needs INGEST_STATE_STORE=database: every worker reads and writes one memo',
      );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(shape(settings, env, cwd, mayCreateDataDir));
}

function shape(s: Settings, env: Env, cwd: string, mayCreateDataDir: boolean) {
  const dataDir = path.resolve(cwd, s.INGEST_DATA_DIR ?? '.ingest');
  const under = (setting: string | null, fallback: string) =>
    path.resolve(cwd, setting ?? path.join(dataDir, fallback));
  return {
    /** Root of everything the service keeps on disk in embedded mode (INGEST_DATA_DIR). */
    dataDir,
    /**
     * Whether this process may create the stores it opens (the embedded database, the state store)
     * where it finds none. Not from the environment: the command says (cli/main.ts); only the
     * commands that fill the stores may, so that one run from the wrong folder fails instead of
     * answering from a new, empty database (lib/data-dir.ts, docs/DECISIONS.md).
     */
    mayCreateDataDir,
    database: {
      /** ENGINE_DB_DSN: a real PostgreSQL with pgvector; null selects the embedded PGlite. */
      dsn: s.ENGINE_DB_DSN,
      /** Where the embedded PGlite keeps its files. */
      embeddedDir: path.join(dataDir, 'pglite'),
      /** INGEST_DB_CONNECT_TIMEOUT_S, in ms: the wait for a connection (docs/OPERATIONS.md "When the database goes away"). */
      connectTimeoutMs: s.INGEST_DB_CONNECT_TIMEOUT_S * 1000,
      /** INGEST_DB_QUERY_TIMEOUT_S, in ms (0: none): the wait for one statement's answer. */
      queryTimeoutMs: s.INGEST_DB_QUERY_TIMEOUT_S * 1000,
    },
    /** ENGINE_DB: filesystem path of the engine state store (not a connection string). */
    stateStorePath: under(s.ENGINE_DB, 'state'),
    /** INGEST_STATE_STORE: the state store in its directory, or in the database. */
    stateStore: s.INGEST_STATE_STORE ?? 'directory',
    /** A writer fence not renewed for this long is stale and taken over (lib/lease.ts). */
    fenceStaleMs: s.INGEST_FENCE_STALE_MS,
    /** ENGINE_SOURCE_PATH: the corpus directory; null means idle mode. */
    sourcePath: s.ENGINE_SOURCE_PATH === null ? null : path.resolve(cwd, s.ENGINE_SOURCE_PATH),
    secrets: {
      pipelineTrigger: s.PIPELINE_TRIGGER_SECRET,
      extractApiToken: s.EXTRACT_API_TOKEN,
      /** INGEST_BYPASS_TOKEN: the web app's deployment-protection bypass, sent with the webhook. */
      protectionBypass: s.INGEST_BYPASS_TOKEN,
    },
    /** IMAGE_SHA, stamped as result.extractor_version. */
    imageSha: s.IMAGE_SHA,
    models: {
      extraction: s.EXTRACTION_MODEL,
      producer: s.PRODUCER_MODEL ?? s.EXTRACTION_MODEL,
      /** The embedding model and whether `dimensions` is sent (lib/embed/client.ts EmbeddingModel). */
      embedding: { name: s.INGEST_EMBEDDING_MODEL, sendDimensions: s.INGEST_EMBEDDING_SEND_DIMENSIONS },
      /** The model calls' budget per provider and model (lib/llm/budget.ts); null sizes: no budget. */
      budget: {
        windowMs: s.INGEST_MODEL_BUDGET_WINDOW_MS,
        anthropic: {
          requestsPerMinute: s.INGEST_ANTHROPIC_REQUESTS_PER_MINUTE,
          tokensPerMinute: s.INGEST_ANTHROPIC_TOKENS_PER_MINUTE,
        },
        openai: {
          requestsPerMinute: s.INGEST_OPENAI_REQUESTS_PER_MINUTE,
          tokensPerMinute: s.INGEST_OPENAI_TOKENS_PER_MINUTE,
        },
      },
    },
    http: { host: s.INGEST_HOST, port: s.INGEST_PORT },
    /** INGEST_WALK_SCHEDULE: a cron expression (UTC) on which `ingest serve` walks; null: never. */
    walkSchedule: s.INGEST_WALK_SCHEDULE,
    /** INGEST_METRICS_TOKEN: the bearer /metrics asks of non-loopback peers; null: loopback only. */
    metricsToken: s.INGEST_METRICS_TOKEN,
    /** The /extract thread pool: threads cleaning at once, and requests allowed to wait for one. */
    extract: { threads: s.INGEST_EXTRACT_THREADS, maxQueue: s.INGEST_EXTRACT_QUEUE },
    /** INGEST_APP_URL: where the pipeline-run webhook goes; null writes pipeline_runs directly. */
    appUrl: s.INGEST_APP_URL,
    /** INGEST_CORPUS_BUCKET: file:///dir or s3://bucket/prefix; null means the directory is authoritative. */
    corpusBucket: s.INGEST_CORPUS_BUCKET,
    /** The producer's knowledge bundle (stages/producer/). */
    bundle: {
      /** INGEST_BUNDLE_DIR: holds the published bundle (`current`) and its versions. */
      dir: under(s.INGEST_BUNDLE_DIR, 'bundle'),
      /** INGEST_BUNDLE_PREFIX: where in the corpus bucket the bundle is copied; pull-sync skips it. */
      bucketPrefix: s.INGEST_BUNDLE_PREFIX,
    },
    producer: {
      /** INGEST_PRODUCER_AFTER_WALK: chain a producer run after every clean walk that changed the corpus. */
      afterWalk: s.INGEST_PRODUCER_AFTER_WALK,
    },
    /** Where an s3:// corpus bucket lives when it is not AWS itself (credentials: the AWS SDK's chain). */
    s3: { endpoint: s.INGEST_S3_ENDPOINT, region: s.INGEST_S3_REGION, forcePathStyle: s.INGEST_S3_FORCE_PATH_STYLE },
    log: {
      level: s.INGEST_LOG_LEVEL ?? ('info' as LogLevel),
      /** INGEST_LOG_LEVEL was set: a command that is quieter by default (`ingest watch`) logs at this level too. */
      levelSet: s.INGEST_LOG_LEVEL !== null,
    },
    /** Requests per minute per client on the authenticated POST routes. */
    rateLimits: {
      walk: s.INGEST_RATE_LIMIT_WALK,
      walkStatus: s.INGEST_RATE_LIMIT_WALK_STATUS,
      extract: s.INGEST_RATE_LIMIT_EXTRACT,
      producerRun: s.INGEST_RATE_LIMIT_PRODUCER_RUN,
      /** Failed authentications per client and minute, on every authenticated route. */
      authFailures: s.INGEST_RATE_LIMIT_AUTH_FAILURES,
      /** INGEST_TRUSTED_PROXY_HEADER: the header a trusted proxy sets to the client's address; null: the peer. */
      trustedProxyHeader: s.INGEST_TRUSTED_PROXY_HEADER,
    },
    sink: { batchRows: s.INGEST_SINK_BATCH_ROWS, flushMs: s.INGEST_SINK_FLUSH_MS, flushes: s.INGEST_SINK_FLUSHES },
    walk: walkSettings(s, under),
    convert: convertSettings(s),
    /** `ingest prefill` (engine/prefill/): the extraction memo bought ahead through the batch API. */
    prefill: {
      batchRequests: s.INGEST_PREFILL_BATCH_REQUESTS,
      pollMs: s.INGEST_PREFILL_POLL_MS,
    },
    /** The bid-worker (`ingest worker`, worker/). */
    worker: workerSettings(s, cwd, under),
    /** The SSRF-safe fetch of passed feed URLs (lib/net/safe-fetch.ts). */
    fetch: fetchSettings(s),
    /** Values of every variable in SECRET_ENV_VARS that is set, plus the DSN password. */
    secretValues: collectSecretValues(env, s.ENGINE_DB_DSN),
  };
}

/** Paths under the data directory unless set (shape's `under`). */
type Under = (setting: string | null, fallback: string) => string;

function walkSettings(s: Settings, under: Under) {
  return {
    /** INGEST_WALK_MODE: a walk's items run in its own process, or as jobs on walk workers. */
    mode: s.INGEST_WALK_MODE ?? 'in-process',
    /** Seconds between the job queue's supervision passes (expired and lost jobs retried or failed). */
    superviseSeconds: s.INGEST_WALK_SUPERVISE_SECONDS,
    /** What `ingest walk-worker` beats into and `ingest walk-worker health` reads (every INGEST_WORKER_HEARTBEAT_MS). */
    workerHeartbeatFile: under(null, 'walk-worker.heartbeat'),
    /** Under which each walk worker keeps, in a directory of its own, the bucket's copy of each item it runs. */
    workerScratch: under(null, 'walk-items'),
    /** Items admitted and not yet durable at once: bounds the walk's memory on any corpus size; a walk worker's items at once. */
    inFlight: s.INGEST_WALK_IN_FLIGHT,
    /** Model calls (extraction and embedding requests) in flight at once across the walk. */
    modelConcurrency: s.INGEST_MODEL_CONCURRENCY,
    /**
     * Chunks of one item extracted, embedded and written at a time (with the extraction windows
     * over the same text): bounds a large item's memory and transactions whatever its size.
     */
    itemBatchChunks: s.INGEST_ITEM_BATCH_CHUNKS,
    /**
     * The mass-removal guard of the cleanup pass: a walk that would remove more than this share
     * (in percent) of the known documents, and more than `removalGuardMinDocs` of them, keeps
     * every row instead (as it always does when the corpus lists nothing), unless allowed.
     */
    maxRemovalPercent: s.INGEST_MAX_REMOVAL_PERCENT,
    removalGuardMinDocs: s.INGEST_REMOVAL_GUARD_MIN_DOCS,
  };
}

function workerSettings(s: Settings, cwd: string, under: Under) {
  return {
    /** Jobs one worker runs at once (and so its model calls in flight). */
    concurrency: s.INGEST_WORKER_CONCURRENCY,
    /** Jobs claimed ahead of a free slot (default: as many as the concurrency). */
    prefetch: s.INGEST_WORKER_PREFETCH,
    /** A claimed job's lease; renewed every third of it while the job works. */
    leaseMs: s.INGEST_WORKER_LEASE_MS,
    /** How often an idle worker polls the queue. */
    pollMs: s.INGEST_WORKER_POLL_MS,
    /** After SIGTERM, how long running jobs may take before they are given back. */
    graceMs: s.INGEST_WORKER_GRACE_MS,
    /** Backoff before a failed job's next attempt: base * 2^(attempt-1), capped. */
    retryBaseMs: s.INGEST_WORKER_RETRY_BASE_MS,
    retryMaxMs: s.INGEST_WORKER_RETRY_MAX_MS,
    /** The heartbeat file the container's health check reads (`ingest worker health`). */
    heartbeatFile: under(s.INGEST_WORKER_HEARTBEAT_FILE, 'worker.heartbeat'),
    heartbeatMs: s.INGEST_WORKER_HEARTBEAT_MS,
    /** INGEST_WORKER_OUTPUT_DIR: where results and filled forms go; null: see outputPrefix. */
    outputDir: s.INGEST_WORKER_OUTPUT_DIR === null ? null : path.resolve(cwd, s.INGEST_WORKER_OUTPUT_DIR),
    /** The corpus bucket's prefix for results when a bucket is set and no directory is. */
    outputPrefix: s.INGEST_WORKER_OUTPUT_PREFIX,
    /** Largest inline form a payload may carry (bytes, before base64). */
    inlineMaxBytes: s.INGEST_WORKER_INLINE_MAX_BYTES,
    /** Evidence retrieved per question (and `ingest search`'s default k). */
    evidenceK: s.INGEST_WORKER_EVIDENCE_K,
  };
}

function convertSettings(s: Settings) {
  return {
    workers: s.INGEST_CONVERT_WORKERS,
    timeoutMs: s.INGEST_CONVERT_TIMEOUT_MS,
    memoryMb: s.INGEST_CONVERT_MEMORY_MB,
    /** Larger files fail as too_large without being read. */
    maxDocumentBytes: s.INGEST_MAX_DOCUMENT_BYTES,
    maxPages: s.INGEST_CONVERT_MAX_PAGES,
    maxCells: s.INGEST_CONVERT_MAX_CELLS,
    /** OCR of PDF pages without words (stages/ocr/). */
    ocr: ocrOptions(s),
    /** PNG, JPEG and TIFF files are documents (mediaTypeFor), read by OCR: so only with OCR on. */
    imageDocuments: s.INGEST_IMAGE_DOCUMENTS && s.INGEST_OCR !== 'off',
  };
}

function fetchSettings(s: Settings) {
  return {
    /** Larger responses (declared or counted after decoding) fail as too_large. */
    maxBytes: s.INGEST_FETCH_MAX_BYTES,
    /** One deadline for a whole fetch: every redirect hop, the headers and the body. */
    timeoutMs: s.INGEST_FETCH_TIMEOUT_MS,
    maxRedirects: s.INGEST_FETCH_MAX_REDIRECTS,
    /** Media types accepted (lower case, no parameters); anything else is unsupported_content_type. */
    contentTypes: s.INGEST_FETCH_CONTENT_TYPES,
    /** CIDRs reachable although forbidden by the address policy; empty in production. */
    allowCidrs: s.INGEST_FETCH_ALLOW_CIDRS,
  };
}

function collectSecretValues(env: Env, dsn: string | null): string[] {
  const values = SECRET_ENV_VARS.map((name) => env[name]?.trim() ?? '').filter((v) => v !== '');
  if (dsn !== null) {
    const password = new URL(dsn).password;
    if (password !== '') values.push(password, decodeURIComponent(password));
  }
  return [...new Set(values)];
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    if (child !== null && typeof child === 'object') deepFreeze(child);
  }
  return Object.freeze(value);
}

/** The DSN with its password replaced, for messages and logs. */
export function describeDsn(dsn: string): string {
  const parsed = new URL(dsn);
  if (parsed.password !== '') parsed.password = 'REDACTED';
  return parsed.toString();
}

function ocrOptions(s: Settings) {
  return {
    enabled: s.INGEST_OCR !== 'off',
    workers: s.INGEST_OCR_WORKERS,
    pageTimeoutMs: s.INGEST_OCR_PAGE_TIMEOUT_MS,
    timeoutMs: s.INGEST_OCR_TIMEOUT_MS,
    memoryMb: s.INGEST_OCR_MEMORY_MB,
    maxPages: s.INGEST_OCR_MAX_PAGES,
    maxPixels: s.INGEST_OCR_MAX_PIXELS,
    language: s.INGEST_OCR_LANGUAGES,
    confidenceFloor: s.INGEST_OCR_CONFIDENCE_FLOOR,
  };
}
