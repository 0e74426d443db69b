// The one place that reads the service's environment. Every knob is parsed here into a typed,
// frozen object; a malformed value is reported with its variable name (never its value, which
// may be a secret) and all problems are reported at once.
//
// Blank means unset (docs/behaviour/tiers.md#blank-means-unset): compose files pass `${VAR:-}`
// through, so an empty or whitespace-only value is treated exactly as if the variable were absent.
//
// The model-client factories are the one exception to "nothing else reads process.env": the
// SDKs must read their variables at construction (docs/behaviour/tiers.md#environment-names).

import path from 'node:path';
import { Cron } from 'croner';
import ipaddr from 'ipaddr.js';
import { IngestError } from './errors.ts';

/** The production default when EXTRACTION_MODEL is unset (docs/behaviour/tiers.md#models). */
export const DEFAULT_EXTRACTION_MODEL = 'claude-sonnet-4-5';
export const DEFAULT_PORT = 8790;

/** Variables whose values are credentials: the logger scrubs every one of them from its output. */
export const SECRET_ENV_VARS = Object.freeze([
  'PIPELINE_TRIGGER_SECRET',
  'EXTRACT_API_TOKEN',
  'CRON_SECRET',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'OPENAI_API_KEY',
  'INGEST_BYPASS_TOKEN',
  'INGEST_METRICS_TOKEN',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const);

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface Config {
  /** Root of everything the service keeps on disk in embedded mode (INGEST_DATA_DIR). */
  readonly dataDir: string;
  /**
   * Whether this process may create the stores it opens (the embedded database, the state store)
   * where it finds none. Not from the environment: the command says (cli/main.ts); only the
   * commands that fill the stores may, so that one run from the wrong folder fails instead of
   * answering from a new, empty database (lib/data-dir.ts, docs/DECISIONS.md).
   */
  readonly mayCreateDataDir: boolean;
  readonly database: {
    /** ENGINE_DB_DSN: a real PostgreSQL with pgvector; null selects the embedded PGlite. */
    readonly dsn: string | null;
    /** Where the embedded PGlite keeps its files. */
    readonly embeddedDir: string;
  };
  /** ENGINE_DB: filesystem path of the engine state store (not a connection string). */
  readonly stateStorePath: string;
  /** A writer fence not renewed for this long is stale and taken over (lib/lease.ts). */
  readonly fenceStaleMs: number;
  /** ENGINE_SOURCE_PATH: the corpus directory; null means idle mode. */
  readonly sourcePath: string | null;
  readonly secrets: {
    readonly pipelineTrigger: string | null;
    readonly extractApiToken: string | null;
    /** INGEST_BYPASS_TOKEN: the web app's deployment-protection bypass, sent with the webhook. */
    readonly protectionBypass: string | null;
  };
  /** IMAGE_SHA, stamped as result.extractor_version. */
  readonly imageSha: string | null;
  readonly models: {
    readonly extraction: string;
    readonly producer: string;
  };
  readonly http: { readonly host: string; readonly port: number };
  /** INGEST_WALK_SCHEDULE: a cron expression (UTC) on which `ingest serve` walks; null: never. */
  readonly walkSchedule: string | null;
  /** INGEST_METRICS_TOKEN: the bearer /metrics asks of non-loopback peers; null: loopback only. */
  readonly metricsToken: string | null;
  /** The /extract thread pool: threads cleaning at once, and requests allowed to wait for one. */
  readonly extract: { readonly threads: number; readonly maxQueue: number };
  /** INGEST_APP_URL: where the pipeline-run webhook goes; null writes pipeline_runs directly. */
  readonly appUrl: string | null;
  /** INGEST_CORPUS_BUCKET: file:///dir or s3://bucket/prefix; null means the directory is authoritative. */
  readonly corpusBucket: string | null;
  /** The producer's knowledge bundle (stages/producer/). */
  readonly bundle: {
    /** INGEST_BUNDLE_DIR: holds the published bundle (`current`) and its versions. */
    readonly dir: string;
    /** INGEST_BUNDLE_PREFIX: where in the corpus bucket the bundle is copied; pull-sync skips it. */
    readonly bucketPrefix: string;
  };
  readonly producer: {
    /** INGEST_PRODUCER_AFTER_WALK: chain a producer run after every clean walk that changed the corpus. */
    readonly afterWalk: boolean;
  };
  /** Where an s3:// corpus bucket lives when it is not AWS itself (credentials: the AWS SDK's chain). */
  readonly s3: { readonly endpoint: string | null; readonly region: string; readonly forcePathStyle: boolean };
  readonly log: {
    readonly level: LogLevel;
    /** INGEST_LOG_LEVEL was set: a command that is quieter by default (`ingest watch`) logs at this level too. */
    readonly levelSet: boolean;
  };
  /** Requests per minute per client on the authenticated POST routes. */
  readonly rateLimits: {
    readonly walk: number;
    readonly walkStatus: number;
    readonly extract: number;
    readonly producerRun: number;
    /** Failed authentications per client and minute, on every authenticated route. */
    readonly authFailures: number;
    /** INGEST_TRUSTED_PROXY_HEADER: the header a trusted proxy sets to the client's address; null: the peer. */
    readonly trustedProxyHeader: string | null;
  };
  readonly sink: { readonly batchRows: number; readonly flushMs: number };
  readonly walk: {
    /** Items admitted and not yet durable at once: bounds the walk's memory on any corpus size. */
    readonly inFlight: number;
    /** Model calls (extraction and embedding requests) in flight at once across the walk. */
    readonly modelConcurrency: number;
    /**
     * Chunks of one item extracted, embedded and written at a time (with the extraction windows
     * over the same text): bounds a large item's memory and transactions whatever its size.
     */
    readonly itemBatchChunks: number;
    /**
     * The mass-removal guard of the cleanup pass: a walk that would remove more than this share
     * (in percent) of the known documents, and more than `removalGuardMinDocs` of them, keeps
     * every row instead (as it always does when the corpus lists nothing), unless allowed.
     */
    readonly maxRemovalPercent: number;
    readonly removalGuardMinDocs: number;
  };
  readonly convert: {
    readonly workers: number;
    readonly timeoutMs: number;
    readonly memoryMb: number;
    /** Larger files fail as too_large without being read. */
    readonly maxDocumentBytes: number;
    readonly maxPages: number;
    readonly maxCells: number;
  };
  /** The bid-worker (`ingest worker`, worker/). */
  readonly worker: {
    /** Jobs one worker runs at once (and so its model calls in flight). */
    readonly concurrency: number;
    /** Jobs claimed ahead of a free slot (default: as many as the concurrency). */
    readonly prefetch: number | null;
    /** A claimed job's lease; renewed every third of it while the job works. */
    readonly leaseMs: number;
    /** How often an idle worker polls the queue. */
    readonly pollMs: number;
    /** After SIGTERM, how long running jobs may take before they are given back. */
    readonly graceMs: number;
    /** Backoff before a failed job's next attempt: base * 2^(attempt-1), capped. */
    readonly retryBaseMs: number;
    readonly retryMaxMs: number;
    /** The heartbeat file the container's health check reads (`ingest worker health`). */
    readonly heartbeatFile: string;
    readonly heartbeatMs: number;
    /** INGEST_WORKER_OUTPUT_DIR: where results and filled forms go; null: see outputPrefix. */
    readonly outputDir: string | null;
    /** The corpus bucket's prefix for results when a bucket is set and no directory is. */
    readonly outputPrefix: string;
    /** Largest inline form a payload may carry (bytes, before base64). */
    readonly inlineMaxBytes: number;
    /** Evidence retrieved per question (and `ingest search`'s default k). */
    readonly evidenceK: number;
  };
  /** The SSRF-safe fetch of passed feed URLs (lib/net/safe-fetch.ts). */
  readonly fetch: {
    /** Larger responses (declared or counted after decoding) fail as too_large. */
    readonly maxBytes: number;
    /** One deadline for a whole fetch: every redirect hop, the headers and the body. */
    readonly timeoutMs: number;
    readonly maxRedirects: number;
    /** Media types accepted (lower case, no parameters); anything else is unsupported_content_type. */
    readonly contentTypes: readonly string[];
    /** CIDRs reachable although forbidden by the address policy; empty in production. */
    readonly allowCidrs: readonly string[];
  };
  /** Values of every variable in SECRET_ENV_VARS that is set, plus the DSN password. */
  readonly secretValues: readonly string[];
}

export class ConfigError extends IngestError {
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super('invalid_config', `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** Parses the environment into a frozen Config, or throws one ConfigError naming every problem. */
export function loadConfig(
  env: Env = process.env,
  cwd: string = process.cwd(),
  { mayCreateDataDir = true }: { mayCreateDataDir?: boolean } = {},
): Config {
  const problems: string[] = [];
  const read = (name: string): string | null => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? null : value.trim();
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === null) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return Number(raw);
  };
  const flag = (name: string, fallback: boolean): boolean => {
    const raw = read(name)?.toLowerCase() ?? null;
    if (raw === null) return fallback;
    if (['1', 'true', 'yes'].includes(raw)) return true;
    if (['0', 'false', 'no'].includes(raw)) return false;
    problems.push(`${name} must be true or false`);
    return fallback;
  };
  const url = (name: string, protocols: readonly string[], hint: string): string | null => {
    const raw = read(name);
    if (raw === null) return null;
    const parsed = URL.canParse(raw) ? new URL(raw) : null;
    if (parsed === null || !protocols.includes(parsed.protocol)) {
      problems.push(`${name} is not a valid URL (expected ${hint})`);
      return null;
    }
    return raw;
  };

  const dataDir = path.resolve(cwd, read('INGEST_DATA_DIR') ?? '.ingest');
  const dsn = url('ENGINE_DB_DSN', ['postgres:', 'postgresql:'], 'postgresql://user:password@host:5432/database');
  const logLevelSet = read('INGEST_LOG_LEVEL');
  const logLevel = logLevelSet ?? 'info';
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    problems.push(`INGEST_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const extraction = read('EXTRACTION_MODEL') ?? DEFAULT_EXTRACTION_MODEL;
  const stateStore = read('ENGINE_DB');
  if (stateStore !== null && /^[a-z][a-z0-9+.-]*:\/\//i.test(stateStore)) {
    problems.push(
      'ENGINE_DB is a filesystem path of the engine state store, not a connection string (the database DSN is ENGINE_DB_DSN)',
    );
  }
  const source = read('ENGINE_SOURCE_PATH');
  const list = (name: string, fallback: readonly string[]): string[] => {
    const raw = read(name);
    return raw === null
      ? [...fallback]
      : raw
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== '');
  };
  const contentTypes = list('INGEST_FETCH_CONTENT_TYPES', ['text/html', 'application/xhtml+xml']).map((t) =>
    t.toLowerCase(),
  );
  if (contentTypes.length === 0 || !contentTypes.every((t) => /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(t))) {
    problems.push('INGEST_FETCH_CONTENT_TYPES must be a comma-separated list of media types such as text/html');
  }
  // Hidden, so that neither the walk nor a directory bucket's listing ever takes it for corpus.
  const bucketPrefix = read('INGEST_BUNDLE_PREFIX') ?? '.bundle/';
  if (!/^\.[a-z0-9_-]+\/$/i.test(bucketPrefix)) {
    problems.push('INGEST_BUNDLE_PREFIX must be one hidden folder name ending in /, such as .bundle/');
  }
  const allowCidrs = list('INGEST_FETCH_ALLOW_CIDRS', []);
  if (!allowCidrs.every((cidr) => ipaddr.isValidCIDR(cidr))) {
    problems.push('INGEST_FETCH_ALLOW_CIDRS must be a comma-separated list of CIDR ranges such as 127.0.0.1/32');
  }

  const walkSchedule = read('INGEST_WALK_SCHEDULE');
  if (walkSchedule !== null) {
    const problem = cronProblem(walkSchedule);
    if (problem !== null) problems.push(`INGEST_WALK_SCHEDULE is not a cron expression (${problem})`);
    if (read('PIPELINE_TRIGGER_SECRET') === null)
      problems.push('INGEST_WALK_SCHEDULE needs PIPELINE_TRIGGER_SECRET: the scheduled walk calls POST /walk with it');
  }

  const config: Config = {
    dataDir,
    mayCreateDataDir,
    database: { dsn, embeddedDir: path.join(dataDir, 'pglite') },
    stateStorePath: path.resolve(cwd, stateStore ?? path.join(dataDir, 'state')),
    fenceStaleMs: integer('INGEST_FENCE_STALE_MS', 60_000, 100, 3_600_000),
    sourcePath: source === null ? null : path.resolve(cwd, source),
    secrets: {
      pipelineTrigger: read('PIPELINE_TRIGGER_SECRET'),
      extractApiToken: read('EXTRACT_API_TOKEN'),
      protectionBypass: read('INGEST_BYPASS_TOKEN'),
    },
    imageSha: read('IMAGE_SHA'),
    models: { extraction, producer: read('PRODUCER_MODEL') ?? extraction },
    http: {
      host: read('INGEST_HOST') ?? '127.0.0.1',
      port: integer('INGEST_PORT', DEFAULT_PORT, 0, 65535),
    },
    walkSchedule,
    metricsToken: read('INGEST_METRICS_TOKEN'),
    extract: {
      threads: integer('INGEST_EXTRACT_THREADS', 1, 1, 64),
      maxQueue: integer('INGEST_EXTRACT_QUEUE', 16, 0, 10_000),
    },
    appUrl: url('INGEST_APP_URL', ['http:', 'https:'], 'http(s)://host/'),
    corpusBucket: url('INGEST_CORPUS_BUCKET', ['file:', 's3:'], 'file:///dir or s3://bucket/prefix'),
    bundle: {
      dir: path.resolve(cwd, read('INGEST_BUNDLE_DIR') ?? path.join(dataDir, 'bundle')),
      bucketPrefix,
    },
    producer: { afterWalk: flag('INGEST_PRODUCER_AFTER_WALK', true) },
    s3: {
      endpoint: url('INGEST_S3_ENDPOINT', ['http:', 'https:'], 'http(s)://host:port of an S3-compatible store'),
      region: read('INGEST_S3_REGION') ?? 'us-east-1',
      forcePathStyle: flag('INGEST_S3_FORCE_PATH_STYLE', false),
    },
    log: { level: logLevel as LogLevel, levelSet: logLevelSet !== null },
    rateLimits: {
      walk: integer('INGEST_RATE_LIMIT_WALK', 30, 1, 100_000),
      walkStatus: integer('INGEST_RATE_LIMIT_WALK_STATUS', 600, 1, 1_000_000),
      authFailures: integer('INGEST_RATE_LIMIT_AUTH_FAILURES', 10, 1, 100_000),
      trustedProxyHeader: read('INGEST_TRUSTED_PROXY_HEADER')?.toLowerCase() ?? null,
      extract: integer('INGEST_RATE_LIMIT_EXTRACT', 120, 1, 100_000),
      producerRun: integer('INGEST_RATE_LIMIT_PRODUCER_RUN', 10, 1, 100_000),
    },
    sink: {
      batchRows: integer('INGEST_SINK_BATCH_ROWS', 500, 1, 50_000),
      flushMs: integer('INGEST_SINK_FLUSH_MS', 50, 0, 60_000),
    },
    walk: {
      inFlight: integer('INGEST_WALK_IN_FLIGHT', 16, 1, 1024),
      modelConcurrency: integer('INGEST_MODEL_CONCURRENCY', 8, 1, 1024),
      itemBatchChunks: integer('INGEST_ITEM_BATCH_CHUNKS', 256, 1, 100_000),
      maxRemovalPercent: integer('INGEST_MAX_REMOVAL_PERCENT', 50, 0, 100),
      removalGuardMinDocs: integer('INGEST_REMOVAL_GUARD_MIN_DOCS', 10, 0, 1_000_000_000),
    },
    convert: {
      workers: integer('INGEST_CONVERT_WORKERS', 2, 1, 64),
      timeoutMs: integer('INGEST_CONVERT_TIMEOUT_MS', 60_000, 100, 3_600_000),
      memoryMb: integer('INGEST_CONVERT_MEMORY_MB', 512, 64, 65_536),
      maxDocumentBytes: integer('INGEST_MAX_DOCUMENT_BYTES', 100 * 1024 * 1024, 1, 2 ** 40),
      maxPages: integer('INGEST_CONVERT_MAX_PAGES', 2_000, 1, 1_000_000),
      maxCells: integer('INGEST_CONVERT_MAX_CELLS', 2_000_000, 1, 1_000_000_000),
    },
    worker: {
      concurrency: integer('INGEST_WORKER_CONCURRENCY', 4, 1, 256),
      prefetch: read('INGEST_WORKER_PREFETCH') === null ? null : integer('INGEST_WORKER_PREFETCH', 0, 0, 256),
      leaseMs: integer('INGEST_WORKER_LEASE_MS', 60_000, 300, 3_600_000),
      pollMs: integer('INGEST_WORKER_POLL_MS', 1_000, 10, 600_000),
      graceMs: integer('INGEST_WORKER_GRACE_MS', 30_000, 0, 3_600_000),
      retryBaseMs: integer('INGEST_WORKER_RETRY_BASE_MS', 5_000, 1, 3_600_000),
      retryMaxMs: integer('INGEST_WORKER_RETRY_MAX_MS', 300_000, 1, 86_400_000),
      heartbeatFile: path.resolve(cwd, read('INGEST_WORKER_HEARTBEAT_FILE') ?? path.join(dataDir, 'worker.heartbeat')),
      heartbeatMs: integer('INGEST_WORKER_HEARTBEAT_MS', 5_000, 10, 600_000),
      outputDir:
        read('INGEST_WORKER_OUTPUT_DIR') === null ? null : path.resolve(cwd, read('INGEST_WORKER_OUTPUT_DIR')!),
      outputPrefix: (read('INGEST_WORKER_OUTPUT_PREFIX') ?? 'bid-worker-output/').replace(/^\/+/, ''),
      inlineMaxBytes: integer('INGEST_WORKER_INLINE_MAX_BYTES', 5 * 1024 * 1024, 1, 64 * 1024 * 1024),
      evidenceK: integer('INGEST_WORKER_EVIDENCE_K', 5, 1, 100),
    },
    fetch: {
      maxBytes: integer('INGEST_FETCH_MAX_BYTES', 10 * 1024 * 1024, 1, 2 ** 31),
      timeoutMs: integer('INGEST_FETCH_TIMEOUT_MS', 30_000, 100, 600_000),
      maxRedirects: integer('INGEST_FETCH_MAX_REDIRECTS', 5, 0, 20),
      contentTypes,
      allowCidrs,
    },
    secretValues: collectSecretValues(read, dsn),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(config);
}

function collectSecretValues(read: (name: string) => string | null, dsn: string | null): string[] {
  const values = SECRET_ENV_VARS.map(read).filter((v): v is string => v !== null);
  if (dsn !== null) {
    const password = new URL(dsn).password;
    if (password !== '') values.push(password, decodeURIComponent(password));
  }
  return [...new Set(values)];
}

/** Why a walk schedule is not a cron expression, or null when it is one (5 fields, or 6 with seconds). */
export function cronProblem(expression: string): string | null {
  try {
    new Cron(expression, { paused: true, mode: '5-or-6-parts', timezone: 'UTC' }).stop();
    return null;
  } catch (error) {
    return (error as Error).message;
  }
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
