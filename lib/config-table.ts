// The service's environment, one entry per variable: how it is parsed and validated (and so the
// type of its setting), its default, and what README.md's environment table says of it. The
// table is the one list: lib/config.ts parses through it and lib/config-readme.ts renders the
// README's table from it (test/config-readme.test.ts keeps the two equal).

import ipaddr from 'ipaddr.js';
import { Cron } from 'croner';
import { DEFAULT_OCR_WORKERS, installedLanguages } from './ocr.ts';

/** The production default when EXTRACTION_MODEL is unset (docs/behaviour/tiers.md#models). */
export const DEFAULT_EXTRACTION_MODEL = 'claude-sonnet-4-5';
/** The specified embedding model (docs/behaviour/stages.md#stage-4-embedding), the default of INGEST_EMBEDDING_MODEL. */
export const DEFAULT_EMBEDDING_MODEL = 'text-embedding-3-large';
export const DEFAULT_PORT = 8790;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Where the engine state store lives: its own lmdb directory, or the database (lib/state/database-store.ts). */
export type StateStoreKind = 'directory' | 'database';
const STATE_STORES: readonly StateStoreKind[] = ['directory', 'database'];

/** Where a walk's items run: in the walk's own process, or as jobs on walk workers (engine/walk/distributed.ts). */
export type WalkMode = 'in-process' | 'distributed';
const WALK_MODES: readonly WalkMode[] = ['in-process', 'distributed'];

export interface Variable<T> {
  /** The README's default column: the value, or what leaving the variable unset means. */
  readonly unset: string;
  /** The README's meaning column. */
  readonly meaning: string;
  /** The value (trimmed; null when unset or blank) into the setting; a malformed one is reported. */
  readonly parse: (raw: string | null, name: string, problem: (message: string) => void) => T;
  /** A credential: its value is scrubbed from every log line and error (lib/config.ts SECRET_ENV_VARS). */
  readonly secret?: true;
}

/** `variable`, marked as a credential. */
const secret = <T>(variable: Variable<T>): Variable<T> => ({ ...variable, secret: true });

const code = (value: string | number | boolean) => `\`${value}\``;

/** A string taken as it is; null when unset. */
const text = (unset: string, meaning: string): Variable<string | null> => ({ unset, meaning, parse: (raw) => raw });

/** A string with a default. */
const textOr = (fallback: string, meaning: string, unset = code(fallback)): Variable<string> => ({
  unset,
  meaning,
  parse: (raw) => raw ?? fallback,
});

/** Read by a model SDK at construction, not here (lib/llm/client.ts, lib/embed/client.ts). */
const readBySdk = (unset: string, meaning: string): Variable<undefined> => ({ unset, meaning, parse: () => undefined });

/** An endpoint a model SDK reads: checked here, so that a malformed one stops every command, not only a model call. */
const sdkEndpoint = (unset: string, meaning: string): Variable<undefined> => {
  const endpoint = url(['http:', 'https:'], 'http(s)://host[:port][/path]', unset, meaning);
  return { unset, meaning, parse: (raw, name, problem) => void endpoint.parse(raw, name, problem) };
};

function integer<F extends number | null>(
  fallback: F,
  min: number,
  max: number,
  meaning: string,
  unset = code(fallback ?? ''),
): Variable<number | F> {
  return {
    unset,
    meaning,
    parse(raw, name, problem) {
      if (raw === null) return fallback;
      if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
        problem(`${name} must be a whole number from ${min} to ${max}`);
        return fallback;
      }
      return Number(raw);
    },
  };
}

const flag = (fallback: boolean, meaning: string): Variable<boolean> => ({
  unset: code(fallback),
  meaning,
  parse(raw, name, problem) {
    const lower = raw?.toLowerCase() ?? null;
    if (lower === null) return fallback;
    if (['1', 'true', 'yes'].includes(lower)) return true;
    if (['0', 'false', 'no'].includes(lower)) return false;
    problem(`${name} must be true or false`);
    return fallback;
  },
});

const url = (protocols: readonly string[], hint: string, unset: string, meaning: string): Variable<string | null> => ({
  unset,
  meaning,
  parse(raw, name, problem) {
    if (raw === null) return null;
    const parsed = URL.canParse(raw) ? new URL(raw) : null;
    if (parsed === null || !protocols.includes(parsed.protocol)) {
      problem(`${name} is not a valid URL (expected ${hint})`);
      return null;
    }
    return raw;
  },
});

/** A comma-separated list (blank items dropped), each item checked; `expected` ends the problem. */
const list = (
  fallback: readonly string[],
  valid: (items: readonly string[]) => boolean,
  expected: string,
  unset: string,
  meaning: string,
  normalise = (item: string) => item,
): Variable<string[]> => ({
  unset,
  meaning,
  parse(raw, name, problem) {
    const items = (
      raw === null
        ? [...fallback]
        : raw
            .split(',')
            .map((item) => item.trim())
            .filter((item) => item !== '')
    ).map(normalise);
    if (!valid(items)) problem(`${name} must be a comma-separated list of ${expected}`);
    return items;
  },
});

/** Why a walk schedule is not a cron expression, or null when it is one (5 fields, or 6 with seconds). */
export function cronProblem(expression: string): string | null {
  try {
    new Cron(expression, { paused: true, mode: '5-or-6-parts', timezone: 'UTC' }).stop();
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/;

/** One of a few words; null when unset (the setting's default is the caller's). */
function oneOf<T extends string>(values: readonly T[], unset: string, meaning: string): Variable<T | null> {
  return {
    unset,
    meaning,
    parse(raw, name, problem) {
      if (raw !== null && !values.includes(raw as T)) problem(`${name} must be one of ${values.join(', ')}`);
      return raw as T | null;
    },
  };
}

/** Every variable, in the README's order. */
export const VARIABLES = {
  ENGINE_DB_DSN: url(
    ['postgres:', 'postgresql:'],
    'postgresql://user:password@host:5432/database',
    'unset: embedded PGlite',
    '`postgresql://user:pass@host:port/db` of a PostgreSQL with pgvector',
  ),
  ENGINE_DB: {
    unset: '`$INGEST_DATA_DIR/state`',
    meaning: 'filesystem path of the engine state store (not a DSN)',
    parse(raw, _name, problem) {
      if (raw !== null && /^[a-z][a-z0-9+.-]*:\/\//i.test(raw))
        problem(
          'ENGINE_DB is a filesystem path of the engine state store, not a connection string (the database DSN is ENGINE_DB_DSN)',
        );
      return raw;
    },
  } satisfies Variable<string | null>,
  INGEST_STATE_STORE: oneOf(
    STATE_STORES,
    '`directory`',
    '`directory`: the engine state store is the lmdb store at `ENGINE_DB`; `database`: it is kept in the database (docs/behaviour/tiers.md#engine-state-store), for every process that writes one corpus',
  ),
  ENGINE_SOURCE_PATH: text('unset: idle mode', 'the corpus directory'),
  PIPELINE_TRIGGER_SECRET: secret(
    text('unset: /walk answers 503', 'bearer for /walk, /walk-status, /producer-run and the webhook'),
  ),
  EXTRACT_API_TOKEN: secret(text('unset: /extract answers 503', 'bearer for /extract')),
  CRON_SECRET: secret(
    readBySdk(
      'unset',
      "the platform's scheduler secret: it opens no route here (docs/behaviour/routes.md); read only to keep its value out of every log line",
    ),
  ),
  IMAGE_SHA: text('unset (warned)', 'stamped as `result.extractor_version`'),
  EXTRACTION_MODEL: textOr(DEFAULT_EXTRACTION_MODEL, 'extraction model'),
  PRODUCER_MODEL: text('`EXTRACTION_MODEL`', 'producer model'),
  ANTHROPIC_BASE_URL: sdkEndpoint(
    'unset: the in-process mock (tier 1)',
    'the gateway of tier 2, with `ANTHROPIC_AUTH_TOKEN` (docs/behaviour/tiers.md#models); this and the next two are read by the SDK at construction, blank values scrubbed',
  ),
  ANTHROPIC_AUTH_TOKEN: secret(readBySdk('unset: the in-process mock (tier 1)', "the gateway's credential (tier 2)")),
  ANTHROPIC_API_KEY: secret(readBySdk('unset: the in-process mock (tier 1)', "set alone: the vendor's key (tier 3)")),
  OPENAI_BASE_URL: sdkEndpoint(
    'unset: the in-process mock',
    'embedding backend (`INGEST_EMBEDDING_MODEL`, 1024 dimensions), with `OPENAI_API_KEY`',
  ),
  OPENAI_API_KEY: secret(readBySdk('unset: the in-process mock', 'the embedding backend credential')),
  INGEST_EMBEDDING_MODEL: textOr(
    DEFAULT_EMBEDDING_MODEL,
    'the embedding model asked of `OPENAI_BASE_URL` (a local OpenAI-compatible server: Ollama, text-embeddings-inference); it must answer 1024 dimensions. The database records the model of its vectors: another model stops walks and searches until `ingest reembed`',
  ),
  INGEST_EMBEDDING_SEND_DIMENSIONS: flag(
    true,
    '`false`: requests carry no `dimensions: 1024` (for servers that reject it; the model must answer 1024 dimensions of itself)',
  ),
  INGEST_LLM_IDENTITY: readBySdk(
    'unset: the identity names `ANTHROPIC_BASE_URL`',
    "the name that stands for the endpoint at `ANTHROPIC_BASE_URL` in the LLM identity (the extraction memo's key), for an endpoint whose answers do not depend on its address; read by lib/llm/client.ts. Tier 1 sets it to `tier1-mock@{version}` beside the mock's URL",
  ),
  INGEST_DATA_DIR: text(
    '`./.ingest` (`npm start`: `./.ingest/examples`)',
    'where embedded mode keeps its files (`pglite/`, `state/`, and the knowledge bundle in `bundle/` unless `INGEST_BUNDLE_DIR` is set); created only by the commands that fill it (Quick start above names them)',
  ),
  INGEST_HOST: textOr('127.0.0.1', 'HTTP listen address of `ingest serve`'),
  INGEST_PORT: integer(DEFAULT_PORT, 0, 65535, 'HTTP listen port of `ingest serve`'),
  INGEST_WALK_SCHEDULE: {
    unset: 'unset: no scheduled walk',
    meaning:
      'a cron expression (5 fields, or 6 with seconds first; read in UTC) on which `ingest serve` calls its own `POST /walk` on loopback with the trigger bearer; a tick that finds a walk running is logged and skipped. Needs `PIPELINE_TRIGGER_SECRET`',
    parse(raw, name, problem) {
      const why = raw === null ? null : cronProblem(raw);
      if (why !== null) problem(`${name} is not a cron expression (${why})`);
      return raw;
    },
  } satisfies Variable<string | null>,
  INGEST_METRICS_TOKEN: secret(
    text(
      'unset: `/metrics` answers loopback peers only',
      'bearer that `GET /metrics` asks of any peer that is not on loopback',
    ),
  ),
  INGEST_EXTRACT_THREADS: integer(1, 1, 64, 'threads cleaning /extract pages at once (off the main thread)'),
  INGEST_EXTRACT_QUEUE: integer(
    16,
    0,
    10_000,
    '/extract requests allowed to wait for a thread; past it, 503 `extract_busy` with `Retry-After`',
  ),
  INGEST_BUNDLE_DIR: text(
    '`$INGEST_DATA_DIR/bundle`',
    'the knowledge bundle: `current` (the published bundle, a link switched atomically) and `versions/`',
  ),
  INGEST_BUNDLE_PREFIX: {
    unset: '`.bundle/`',
    meaning:
      'with a corpus bucket, where each published bundle is copied in it (a hidden folder; pull-sync passes it over)',
    parse(raw, _name, problem) {
      // Hidden, so that neither the walk nor a directory bucket's listing ever takes it for corpus.
      const prefix = raw ?? '.bundle/';
      if (!/^\.[a-z0-9_-]+\/$/i.test(prefix))
        problem('INGEST_BUNDLE_PREFIX must be one hidden folder name ending in /, such as .bundle/');
      return prefix;
    },
  } satisfies Variable<string>,
  INGEST_PRODUCER_AFTER_WALK: flag(
    true,
    'chain a producer run after every clean walk that changed or removed documents',
  ),
  INGEST_APP_URL: url(
    ['http:', 'https:'],
    'http(s)://host/',
    'unset: runs written to pipeline_runs directly',
    'web app receiving the pipeline-run webhook',
  ),
  INGEST_CORPUS_BUCKET: url(
    ['file:', 's3:'],
    'file:///dir or s3://bucket/prefix',
    'unset: the directory is authoritative',
    '`file:///dir` or `s3://bucket/prefix`: pulled into the corpus before every walk, written through by /stage',
  ),
  INGEST_S3_ENDPOINT: url(
    ['http:', 'https:'],
    'http(s)://host:port of an S3-compatible store',
    'unset: AWS itself',
    "`http(s)://host:port` of another S3-compatible store (credentials: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` or the SDK's other sources)",
  ),
  INGEST_S3_REGION: textOr('us-east-1', 'region of the bucket'),
  INGEST_S3_FORCE_PATH_STYLE: flag(false, '`true` for stores that address buckets by path, not by host name'),
  AWS_SECRET_ACCESS_KEY: secret(
    readBySdk("unset: the AWS SDK's other credential sources", "the S3 bucket's secret key, read by the AWS SDK"),
  ),
  AWS_SESSION_TOKEN: secret(readBySdk('unset', "a temporary S3 credential's session token, read by the AWS SDK")),
  INGEST_LOG_LEVEL: oneOf(
    LOG_LEVELS,
    '`info` (`ingest watch`: `warn`)',
    '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; on a terminal the log is one readable line per record, elsewhere JSON lines',
  ),
  INGEST_SINK_BATCH_ROWS: integer(500, 1, 50_000, 'rows per UPSERT flush'),
  INGEST_SINK_FLUSH_MS: integer(50, 0, 60_000, 'longest wait before a partial batch is flushed'),
  INGEST_SINK_FLUSHES: integer(
    3,
    1,
    16,
    'flushes at once on PostgreSQL, each in a transaction on a connection of its own (PGlite has one session: always 1)',
  ),
  INGEST_DB_CONNECT_TIMEOUT_S: integer(
    30,
    1,
    600,
    'longest wait for a PostgreSQL connection (a new one, or a free one of the pool) before the work fails with `database_unavailable`; a refused or reset connection fails at once',
  ),
  INGEST_DB_QUERY_TIMEOUT_S: integer(
    600,
    0,
    86_400,
    'longest wait for the answer to one PostgreSQL statement (a server that hangs, a network that drops packets) before it fails with `database_unavailable`; `0`: no limit. `ingest db migrate` waits without one',
  ),
  INGEST_FENCE_STALE_MS: integer(
    60_000,
    100,
    3_600_000,
    'a writer fence its holder stopped renewing (killed, frozen, its container gone) is taken over after this long',
  ),
  INGEST_WALK_MODE: oneOf(
    WALK_MODES,
    '`in-process`',
    '`in-process`: a walk runs its items itself; `distributed`: it queues them as jobs for `ingest walk-worker` processes (docs/OPERATIONS.md#a-walk-on-several-machines; needs `ENGINE_DB_DSN` and `INGEST_STATE_STORE=database`)',
  ),
  INGEST_WALK_SUPERVISE_SECONDS: integer(
    60,
    1,
    3600,
    "seconds between the job queue's supervision passes: a lost walk worker's items run again within its 30 s heartbeat and this",
  ),
  INGEST_WALK_IN_FLIGHT: integer(
    16,
    1,
    1024,
    "items converting, extracting or embedding at once, with as many again waiting for their last rows to land (bounds a walk's memory); a walk worker's items at once",
  ),
  INGEST_MODEL_CONCURRENCY: integer(8, 1, 1024, 'model calls (extraction and embedding requests) in flight at once'),
  INGEST_ANTHROPIC_REQUESTS_PER_MINUTE: integer(
    null,
    1,
    1_000_000_000,
    'the extraction model\'s budget of requests per minute, shared by every process on the database (docs/OPERATIONS.md "Size the model budget")',
    'unset: no budget',
  ),
  INGEST_ANTHROPIC_TOKENS_PER_MINUTE: integer(
    null,
    1,
    1_000_000_000,
    "the extraction model's budget of input and output tokens per minute, shared like the requests",
    'unset: no budget',
  ),
  INGEST_OPENAI_REQUESTS_PER_MINUTE: integer(
    null,
    1,
    1_000_000_000,
    "the embedding model's budget of requests per minute, shared like the extraction model's",
    'unset: no budget',
  ),
  INGEST_OPENAI_TOKENS_PER_MINUTE: integer(
    null,
    1,
    1_000_000_000,
    "the embedding model's budget of input tokens per minute, shared like the requests",
    'unset: no budget',
  ),
  INGEST_MODEL_BUDGET_WINDOW_MS: integer(
    60_000,
    100,
    3_600_000,
    'the window the per-minute budgets are counted over, scaled to it (tests and benchmarks shorten it)',
  ),
  INGEST_ITEM_BATCH_CHUNKS: integer(
    256,
    1,
    100_000,
    "chunks of one file extracted, embedded and written at a time (with the extraction windows over the same text): a large file's memory and transactions stay bounded",
  ),
  INGEST_PREFILL_BATCH_REQUESTS: integer(
    100_000,
    1,
    100_000,
    "requests `ingest prefill` puts in one batch (the vendor's limit is 100,000; a batch also stays under 256 MB)",
  ),
  INGEST_PREFILL_POLL_MS: integer(
    60_000,
    10,
    3_600_000,
    "how often `ingest prefill` asks whether its batches have ended (the vendor's take minutes to hours)",
  ),
  INGEST_MAX_REMOVAL_PERCENT: integer(
    50,
    0,
    100,
    "a walk that would remove more than this share of the known documents (and more than the next variable's count) keeps them, with a warning, unless allowed",
  ),
  INGEST_REMOVAL_GUARD_MIN_DOCS: integer(
    10,
    0,
    1_000_000_000,
    'removals of at most this many documents never need allowing (a corpus that lists nothing always does)',
  ),
  INGEST_CONVERT_WORKERS: integer(2, 1, 64, 'converter child processes (PDF, DOCX, XLSX)'),
  INGEST_CONVERT_TIMEOUT_MS: integer(60_000, 100, 3_600_000, 'a conversion running longer is killed (`timeout`)'),
  INGEST_CONVERT_MEMORY_MB: integer(
    512,
    64,
    65_536,
    'a converter child whose resident memory passes this is killed (`memory_limit`)',
  ),
  INGEST_MAX_DOCUMENT_BYTES: integer(
    100 * 1024 * 1024,
    1,
    2 ** 40,
    'larger files fail as `too_large` without being read',
  ),
  INGEST_CONVERT_MAX_PAGES: integer(2_000, 1, 1_000_000, 'PDFs with more pages fail as `too_many_pages`'),
  INGEST_CONVERT_MAX_CELLS: integer(2_000_000, 1, 1_000_000_000, 'workbooks with more cells fail as `too_many_cells`'),
  INGEST_OCR: oneOf(
    ['on', 'off'],
    '`on`',
    '`off`: pages without text are not OCRed and the document has the warning `no_text_layer`',
  ),
  INGEST_IMAGE_DOCUMENTS: flag(
    false,
    'PNG, JPEG and TIFF files are documents, read by OCR (with `INGEST_OCR` on); otherwise dropped as of no known type',
  ),
  INGEST_OCR_LANGUAGES: {
    unset: '`eng`',
    meaning: 'the language OCR reads, one of those installed (@tesseract.js-data packages; `eng` in the image)',
    parse(raw, name, problem) {
      const language = raw ?? 'eng';
      const installed = installedLanguages();
      if (!installed.includes(language))
        problem(`${name}: ${language} is not an installed OCR language (installed: ${installed.join(', ')})`);
      return language;
    },
  } satisfies Variable<string>,
  INGEST_OCR_WORKERS: integer(
    DEFAULT_OCR_WORKERS,
    1,
    64,
    'OCR child processes reading at once',
    'half the cores, at least 1',
  ),
  INGEST_OCR_PAGE_TIMEOUT_MS: integer(
    120_000,
    100,
    3_600_000,
    'OCR of one page running longer kills its child (`timeout`): a dense page took 11 s on a loaded 2-core machine',
  ),
  INGEST_OCR_TIMEOUT_MS: integer(
    3_600_000,
    100,
    86_400_000,
    "OCR of one document's pages running longer kills its child (`timeout`): a 200-page scan fits",
  ),
  INGEST_OCR_MEMORY_MB: integer(
    1_536,
    128,
    65_536,
    'an OCR child whose resident memory passes this is killed (`memory_limit`): a dense letter page at 300 dpi took it to 740 MB',
  ),
  INGEST_OCR_MAX_PAGES: integer(500, 1, 1_000_000, 'documents with more pages to OCR fail as `too_many_ocr_pages`'),
  INGEST_OCR_MAX_PIXELS: integer(
    12_000_000,
    10_000,
    1_000_000_000,
    'a PDF page is drawn for OCR at 300 dpi or at this many pixels, the fewer (a letter page at 300 dpi is 8.4 million); an image declaring more fails as `too_many_pixels`',
  ),
  INGEST_OCR_CONFIDENCE_FLOOR: integer(
    60,
    0,
    100,
    'OCRed pages with a lower mean confidence (0-100) are named in the warning `ocr`, and kept',
  ),
  INGEST_FETCH_CONTENT_TYPES: list(
    ['text/html', 'application/xhtml+xml'],
    (types) => types.length > 0 && types.every((t) => MEDIA_TYPE.test(t)),
    'media types such as text/html',
    '`text/html,application/xhtml+xml`',
    'media types a feed page may have (`unsupported_content_type` otherwise)',
    (type) => type.toLowerCase(),
  ),
  INGEST_FETCH_ALLOW_CIDRS: list(
    [],
    (cidrs) => cidrs.every((cidr) => ipaddr.isValidCIDR(cidr)),
    'CIDR ranges such as 127.0.0.1/32',
    'unset: none',
    'comma-separated CIDRs the fetch may reach although the SSRF policy forbids them (tests on loopback); never set in production',
  ),
  INGEST_FETCH_MAX_BYTES: integer(
    10 * 1024 * 1024,
    1,
    2 ** 31,
    'a feed page larger than this (declared, or counted after decompression) fails as `too_large`',
  ),
  INGEST_FETCH_TIMEOUT_MS: integer(
    30_000,
    100,
    600_000,
    'one deadline per feed URL for every redirect hop, the headers and the body (`timeout`)',
  ),
  INGEST_FETCH_MAX_REDIRECTS: integer(
    5,
    0,
    20,
    'redirect hops followed, each re-checked (`too_many_redirects` past it)',
  ),
  INGEST_WORKER_CONCURRENCY: integer(
    4,
    1,
    256,
    'bid-worker jobs one `ingest worker` runs at once (and its model calls in flight)',
  ),
  INGEST_WORKER_PREFETCH: integer(
    null,
    0,
    256,
    'jobs claimed ahead of a free slot, so a freed slot starts its next job at once; they hold a lease (and an attempt) while they wait; `0` claims only for free slots',
    'the concurrency',
  ),
  INGEST_WORKER_LEASE_MS: integer(
    60_000,
    300,
    3_600_000,
    "a claimed job's lease, renewed every third of it; a job whose worker died is claimed again once it ends",
  ),
  INGEST_WORKER_POLL_MS: integer(1_000, 10, 600_000, 'how often an idle worker polls processing_queue'),
  INGEST_WORKER_GRACE_MS: integer(
    30_000,
    0,
    3_600_000,
    'after SIGTERM, how long running jobs may finish before they are given back to the queue',
  ),
  INGEST_WORKER_RETRY_BASE_MS: integer(
    5_000,
    1,
    3_600_000,
    "backoff before a failed job's next attempt: base x 2^(attempt-1), capped by the next variable, jittered",
  ),
  INGEST_WORKER_RETRY_MAX_MS: integer(300_000, 1, 86_400_000, "the cap of a failed job's backoff"),
  INGEST_WORKER_HEARTBEAT_FILE: text(
    '`$INGEST_DATA_DIR/worker.heartbeat`',
    "the file the worker's poll loop rewrites; `ingest worker health` reads it",
  ),
  INGEST_WORKER_HEARTBEAT_MS: integer(
    5_000,
    10,
    600_000,
    'heartbeat interval; the health check fails after three missed beats',
  ),
  INGEST_WORKER_OUTPUT_DIR: text(
    'unset: see the next line',
    'directory for template_fill results and filled forms (one folder per job id)',
  ),
  INGEST_WORKER_OUTPUT_PREFIX: {
    unset: '`bid-worker-output/`',
    meaning:
      'with a corpus bucket and no output directory, results go to the bucket under this prefix (pull-sync skips it); with neither, to `$INGEST_DATA_DIR/bid-worker-output`',
    parse: (raw) => (raw ?? 'bid-worker-output/').replace(/^\/+/, ''),
  } satisfies Variable<string>,
  INGEST_WORKER_INLINE_MAX_BYTES: integer(
    5 * 1024 * 1024,
    1,
    64 * 1024 * 1024,
    'largest form a payload may carry inline',
  ),
  INGEST_WORKER_EVIDENCE_K: integer(5, 1, 100, "evidence retrieved per question (and `ingest search`'s default)"),
  INGEST_BYPASS_TOKEN: secret(text('unset', 'deployment-protection bypass sent with the webhook')),
  INGEST_RATE_LIMIT_WALK: integer(30, 1, 100_000, '/walk requests per minute per client'),
  INGEST_RATE_LIMIT_WALK_STATUS: integer(600, 1, 1_000_000, '/walk-status requests per minute per client'),
  INGEST_RATE_LIMIT_EXTRACT: integer(120, 1, 100_000, '/extract requests per minute per client'),
  INGEST_RATE_LIMIT_PRODUCER_RUN: integer(10, 1, 100_000, '/producer-run requests per minute per client'),
  INGEST_RATE_LIMIT_AUTH_FAILURES: integer(
    10,
    1,
    100_000,
    'failed authentications per minute per client on every authenticated route; past it, 429',
  ),
  INGEST_TRUSTED_PROXY_HEADER: {
    unset: 'unset: the socket peer',
    meaning:
      "the header a trusted proxy in front sets to the client's address (its last entry counts), e.g. `X-Forwarded-For`",
    parse: (raw) => raw?.toLowerCase() ?? null,
  } satisfies Variable<string | null>,
} as const;

export type VariableName = keyof typeof VARIABLES;

/** Each variable's setting, typed by its entry's parser. */
export type Settings = { readonly [N in VariableName]: ReturnType<(typeof VARIABLES)[N]['parse']> };

/**
 * Every variable parsed: blank means unset (compose files pass `${VAR:-}` through, so an empty
 * or whitespace-only value is treated exactly as if the variable were absent).
 */
export function parseSettings(env: Readonly<Record<string, string | undefined>>, problems: string[]): Settings {
  const settings: Record<string, unknown> = {};
  for (const [name, variable] of Object.entries(VARIABLES) as [VariableName, Variable<unknown>][]) {
    const value = env[name];
    const raw = value === undefined || value.trim() === '' ? null : value.trim();
    settings[name] = variable.parse(raw, name, (message) => problems.push(message));
  }
  return settings as Settings;
}
