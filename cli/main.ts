// The `ingest` command line. Each subcommand is one entry in COMMANDS; `ingest --help` lists
// them. Exit codes (docs/OPERATIONS.md "Exit codes of the CLI"): 0 success, 1 the command failed,
// 2 bad usage or configuration, 3 a walk that completed without doing its job, 130 Ctrl-C.

import type { Command, Run } from './command.ts';

/**
 * A command whose module is imported when it runs, not when the CLI starts: `--help` and the
 * light commands then load none of the database, state-store and converter libraries.
 */
const lazy =
  <M>(load: () => Promise<M>, pick: (module: M) => Run): Run =>
  async (args, context) =>
    pick(await load())(args, context);

const COMMANDS: Record<string, Command> = {
  serve: {
    usage: 'ingest serve [--host H] [--port N]',
    summary: 'run the HTTP sidecar (default 127.0.0.1:8790); boot never walks',
    createsDataDir: true,
    run: lazy(
      () => import('./serve.ts'),
      (m) => m.serveCommand,
    ),
  },
  health: {
    usage: 'ingest health [--url U]',
    summary: "the container's health check: exit 0 when the sidecar's GET /health answers 200",
    run: lazy(
      () => import('./health.ts'),
      (m) => m.healthCommand,
    ),
  },
  walk: {
    usage: 'ingest walk [PATH] [--full-reprocess] [--read-scans] [--allow-mass-removal] [--rebind-corpus] [--json]',
    summary: 'walk the corpus (PATH, else ENGINE_SOURCE_PATH) once into rows and print a summary',
    createsDataDir: true,
    opensDatabaseFirst: true,
    run: lazy(
      () => import('./walk.ts'),
      (m) => m.walkCommand,
    ),
  },
  prefill: {
    usage: 'ingest prefill [PATH] [--dry-run] [--json]',
    summary:
      "buy the extraction answers the next walk would ask for through the vendor's batch API (half price), into its memo",
    createsDataDir: true,
    run: lazy(
      () => import('./prefill.ts'),
      (m) => m.prefillCommand,
    ),
  },
  watch: {
    usage: 'ingest watch [PATH] [--quiet-ms N] [--reconcile-s N] [--verbose] [--rebind-corpus]',
    summary: 'walk the corpus, then again after every burst of saves (one line per walk); Ctrl-C stops after a commit',
    createsDataDir: true,
    opensDatabaseFirst: true,
    run: lazy(
      () => import('./watch.ts'),
      (m) => m.watchCommand,
    ),
  },
  reembed: {
    usage: 'ingest reembed [--batch N] [--json]',
    summary:
      'embed every vector again with INGEST_EMBEDDING_MODEL and record it (fenced as a walk; a stopped run goes on)',
    run: lazy(
      () => import('./reembed.ts'),
      (m) => m.reembedCommand,
    ),
  },
  'db migrate': {
    usage: 'ingest db migrate',
    summary: 'apply the reference platform schema (idempotent) and print where the database lives',
    createsDataDir: true,
    run: lazy(
      () => import('./db.ts'),
      (m) => m.dbMigrateCommand,
    ),
  },
  extract: {
    usage: 'ingest extract [FILE|-]',
    summary: 'clean one HTML file (or stdin) to its main text, as POST /extract does; prints the result as JSON',
    run: lazy(
      () => import('./extract.ts'),
      (m) => m.extractCommand,
    ),
  },
  preflight: {
    usage: 'ingest preflight',
    summary: 'send one cheap message to the configured model endpoint; non-zero exit on a dead key',
    run: lazy(
      () => import('./preflight.ts'),
      (m) => m.preflightCommand,
    ),
  },
  nightly: {
    usage: 'ingest nightly --tier mock|gateway|vendor [--sidecar URL] [--timeout S] [--full-reprocess] [--json]',
    summary: 'the nightly lane against a running sidecar: tier check, preflight or mock health, a walk, rows landed',
    run: lazy(
      () => import('./nightly/index.ts'),
      (m) => m.nightlyCommand,
    ),
  },
  mock: {
    usage:
      'ingest mock [--host H] [--port N] [--latency-ms N] [--fault-rate F] [--auth-token T] [--limit-requests N] [--limit-tokens N] [--limit-input-tokens N] [--limit-output-tokens N] [--limit-window-ms N] [--limit-window fixed|sliding] [--batch-delay-ms N] [--batch-error-rate F] [--batch-expire-rate F]',
    summary: 'run the mock model server (tier 1) alone',
    run: lazy(
      () => import('./mock.ts'),
      (m) => m.mockCommand,
    ),
  },
  'check-url': {
    usage: 'ingest check-url URL...',
    summary: 'apply the SSRF policy to each URL (DNS only, no connection); one JSON line per URL',
    run: lazy(
      () => import('./check-url.ts'),
      (m) => m.checkUrlCommand,
    ),
  },
  'bench corpus': {
    usage: 'ingest bench corpus --docs N [--mix md:70,pdf:10,docx:10,xlsx:5,html:5] [--seed S] OUT',
    summary: 'write a deterministic synthetic corpus of N documents for the benchmarks (bench/README.md)',
    // Loaded on use: the generator lives in bench/ and writes PDF and DOCX with dev dependencies,
    // all left out of the image (Dockerfile), where every other command must still start.
    run: async (args) => (await importFromCheckout(() => import('./bench-corpus.ts'))).benchCorpusCommand(args),
  },
  'feeds add': {
    usage: 'ingest feeds add URL... [--write-platform-ledger]',
    summary: 'add each URL to the feed_articles ledger as a passed row (the walk fetches passed URLs)',
    createsDataDir: true,
    run: lazy(
      () => import('./feeds.ts'),
      (m) => m.feedsAddCommand,
    ),
  },
  'feeds list': {
    usage: 'ingest feeds list [--passed|--unpassed] [--json]',
    summary: 'the feed_articles ledger: each row passed or not, linked to its reference item or not',
    run: lazy(
      () => import('./feeds.ts'),
      (m) => m.feedsListCommand,
    ),
  },
  'feeds pass': {
    usage: 'ingest feeds pass URL... [--write-platform-ledger]',
    summary: "set passed on the URL's ledger rows: the next walk fetches it",
    run: lazy(
      () => import('./feeds.ts'),
      (m) => m.feedsPassCommand,
    ),
  },
  'feeds unpass': {
    usage: 'ingest feeds unpass URL... [--write-platform-ledger]',
    summary: "clear passed on the URL's ledger rows: the next walk retracts its derived rows",
    run: lazy(
      () => import('./feeds.ts'),
      (m) => m.feedsUnpassCommand,
    ),
  },
  'entities list': {
    usage: 'ingest entities list [--pinned] [--limit N] [--json]',
    summary: 'the entities stage 5 resolved: canonical names by mentions, pinned ones marked',
    run: lazy(
      () => import('./entities.ts'),
      (m) => m.entitiesListCommand,
    ),
  },
  'entities show': {
    usage: 'ingest entities show <mention id> [--json]',
    summary: "one mention's entity: the names that chain under it and all its mentions",
    run: lazy(
      () => import('./entities.ts'),
      (m) => m.entitiesShowCommand,
    ),
  },
  'entities merge': {
    usage: 'ingest entities merge --into <mention id> <mention id>...',
    summary: "merge the mentions' entities into the target's and pin the survivors (an admin merge)",
    run: lazy(
      () => import('./entities.ts'),
      (m) => m.entitiesMergeCommand,
    ),
  },
  'qa proposals': {
    usage: 'ingest qa proposals [--status proposed|accepted|rejected] [--limit N] [--json]',
    summary: 'the Q&A dedup proposals of stage 5, the most similar first, both pairs side by side',
    run: lazy(
      () => import('./qa.ts'),
      (m) => m.qaProposalsCommand,
    ),
  },
  'qa decide': {
    usage: 'ingest qa decide <proposal id> accept|reject',
    summary: 'record a decision on a Q&A dedup proposal (walks never change it again)',
    run: lazy(
      () => import('./qa.ts'),
      (m) => m.qaDecideCommand,
    ),
  },
  produce: {
    usage: 'ingest produce [--all] [--redraft] [--json]',
    summary: 'one producer run: redraft the bundle concepts whose evidence moved (--all: look at every concept)',
    run: lazy(
      () => import('./produce.ts'),
      (m) => m.produceCommand,
    ),
  },
  'bundle check': {
    usage: 'ingest bundle check [DIR] [--json]',
    summary: 'check a knowledge bundle (default: the published one): OKF 0.1 conformance, listings, citations',
    run: lazy(
      () => import('./produce.ts'),
      (m) => m.bundleCheckCommand,
    ),
  },
  worker: {
    usage: 'ingest worker [--concurrency N]',
    summary: 'run the bid-worker: poll processing_queue for analyse_form and template_fill jobs (no HTTP server)',
    createsDataDir: true,
    run: lazy(
      () => import('./worker.ts'),
      (m) => m.workerCommand,
    ),
  },
  'walk-worker': {
    usage: 'ingest walk-worker [PATH]',
    summary: 'work the items of distributed walks (INGEST_WALK_MODE=distributed) from the walk_item queue',
    run: lazy(
      () => import('./walk-worker.ts'),
      (m) => m.walkWorkerCommand,
    ),
  },
  'walk-worker health': {
    usage: 'ingest walk-worker health',
    summary: "the walk worker container's health check: exit 0 while its heartbeat is fresh",
    run: lazy(
      () => import('./walk-worker.ts'),
      (m) => m.walkWorkerHealthCommand,
    ),
  },
  'worker health': {
    usage: 'ingest worker health',
    summary: "the bid-worker container's health check: exit 0 while its heartbeat is fresh",
    run: lazy(
      () => import('./worker.ts'),
      (m) => m.workerHealthCommand,
    ),
  },
  'jobs enqueue': {
    usage:
      'ingest jobs enqueue analyse_form|template_fill (FILE | --bucket-key KEY | --analysis JOB_ID) [--evidence-k N] [--max-attempts N]',
    summary: 'queue a bid-worker job with the payload the platform would send; prints its id',
    run: lazy(
      () => import('./jobs.ts'),
      (m) => m.jobsEnqueueCommand,
    ),
  },
  'jobs list': {
    usage: 'ingest jobs list [--status queued|running|done|failed] [--limit N] [--json]',
    summary: 'the bid-worker jobs, newest first, with their attempts and errors',
    run: lazy(
      () => import('./jobs.ts'),
      (m) => m.jobsListCommand,
    ),
  },
  'jobs show': {
    usage: 'ingest jobs show ID',
    summary: 'one job with its payload and result, as JSON',
    run: lazy(
      () => import('./jobs.ts'),
      (m) => m.jobsShowCommand,
    ),
  },
  'jobs retry': {
    usage: 'ingest jobs retry ID',
    summary: 'queue a failed job again with its attempts reset',
    run: lazy(
      () => import('./jobs.ts'),
      (m) => m.jobsRetryCommand,
    ),
  },
  'jobs schema': {
    usage: 'ingest jobs schema analyse_form.payload|analyse_form.result|template_fill.payload|template_fill.result',
    summary: 'print the JSON Schema of a job payload or result',
    run: lazy(
      () => import('./jobs.ts'),
      (m) => m.jobsSchemaCommand,
    ),
  },
  search: {
    usage: 'ingest search QUERY [--k N] [--json]',
    summary: 'the evidence template_fill retrieves for a question: Q&A pairs, chunks, entity facts, with citations',
    opensDatabaseFirst: true,
    run: lazy(
      () => import('./search.ts'),
      (m) => m.searchCommand,
    ),
  },
  'state verify': {
    usage: 'ingest state verify',
    summary: 'inspect the engine state store (format version, memo counts, bound database)',
    run: lazy(
      () => import('./state.ts'),
      (m) => m.stateVerifyCommand,
    ),
  },
  'state reset': {
    usage: 'ingest state reset --yes',
    summary: 'delete the engine state store; the next walk re-extracts everything',
    run: lazy(
      () => import('./state.ts'),
      (m) => m.stateResetCommand,
    ),
  },
};

/** The commands that may create a data directory (README.md's Quick start names them; a test holds it). */
export const DATA_DIR_CREATORS: readonly string[] = Object.entries(COMMANDS)
  .filter(([, command]) => command.createsDataDir === true)
  .map(([name]) => name);

/** Imports a module that only a development checkout has, or says so in a sentence. */
async function importFromCheckout<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error(
      'this command needs a development checkout (bench/ and the dev dependencies), which the image leaves out',
    );
  }
}

/** Help lines stay within this width: a usage line, then its summary wrapped under it. */
const HELP_WIDTH = 96;

/** `text` broken at spaces into lines of at most HELP_WIDTH columns, each starting with `indent`. */
function wrap(text: string, indent: string, continuation = indent): string[] {
  const lines: string[] = [];
  let line = indent;
  for (const word of text.split(' ')) {
    if (line.trim() !== '' && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = continuation + word;
    } else line += line.trim() === '' ? word : ` ${word}`;
  }
  return [...lines, line];
}

const describe = (command: Command): string =>
  [...wrap(command.usage, '  ', '        '), ...wrap(command.summary, '      ')].join('\n');

export function helpText(commands: readonly Command[] = Object.values(COMMANDS)): string {
  return (
    'usage: ingest <command> [options]     (ingest <command> --help: one command or group)\n\n' +
    `commands:\n${commands.map(describe).join('\n')}\n  ingest --help\n      show this help\n`
  );
}

/** The commands named `name` or grouped under it (`jobs` -> jobs enqueue, jobs list, ...). */
function commandsUnder(name: string): Command[] {
  return Object.entries(COMMANDS)
    .filter(([key]) => key === name || key.startsWith(`${name} `))
    .map(([, command]) => command);
}

/** The help for the longest leading words of argv that name a command or a group, if any do. */
function helpFor(argv: string[]): string | null {
  const firstOption = argv.findIndex((a) => a.startsWith('-'));
  const words = (firstOption === -1 ? argv : argv.slice(0, firstOption)).slice(0, 3);
  for (let n = words.length; n > 0; n--) {
    const commands = commandsUnder(words.slice(0, n).join(' '));
    if (commands.length > 0) return `${commands.map(describe).join('\n')}\n`;
  }
  return null;
}

/** Finds the longest command name that prefixes argv ("db migrate" before "db"). */
function resolveCommand(argv: string[]): { command: Command; rest: string[] } | null {
  for (let n = Math.min(argv.length, 3); n > 0; n--) {
    const command = COMMANDS[argv.slice(0, n).join(' ')];
    if (command !== undefined) return { command, rest: argv.slice(n) };
  }
  return null;
}

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    process.stdout.write(helpText());
    return argv.length === 0 ? 2 : 0;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    const help = helpFor(argv);
    if (help !== null) {
      process.stdout.write(`usage:\n${help}`);
      return 0;
    }
  }
  const resolved = resolveCommand(argv);
  if (resolved === null) {
    const group = helpFor(argv.slice(0, 1));
    process.stderr.write(
      group === null
        ? `ingest: unknown command "${argv.join(' ')}"\n\n${helpText()}`
        : `ingest: "${argv.join(' ')}" names no command; the "${argv[0]}" commands are:\n${group}`,
    );
    return 2;
  }
  return (await import('./run-command.ts')).runCommand(resolved.command, resolved.rest);
}
