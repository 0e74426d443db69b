// The `ingest` command line. Each subcommand is one entry in COMMANDS; `ingest --help` lists
// them. Exit codes: 0 success, 1 the command failed, 2 bad usage or configuration.

import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../lib/config.ts';
import { createLogger, lineScrubber, type Logger } from '../lib/log.ts';
import { openDatabase } from '../lib/db/open.ts';
import { migrate } from '../lib/db/migrate.ts';
import { stateResetCommand, stateVerifyCommand } from './state.ts';
import { walkCommand } from './walk.ts';
import { watchCommand } from './watch.ts';
import { mockCommand } from './mock.ts';
import { preflightCommand } from './preflight.ts';
import { nightlyCommand } from './nightly.ts';
import { serveCommand } from './serve.ts';
import { healthCommand } from './health.ts';
import { checkUrlCommand } from './check-url.ts';
import { extractCommand } from './extract.ts';
import { entitiesListCommand, entitiesMergeCommand, entitiesShowCommand } from './entities.ts';
import { qaDecideCommand, qaProposalsCommand } from './qa.ts';
import { bundleCheckCommand, produceCommand } from './produce.ts';
import { workerCommand, workerHealthCommand } from './worker.ts';
import { jobsEnqueueCommand, jobsListCommand, jobsRetryCommand, jobsSchemaCommand, jobsShowCommand } from './jobs.ts';
import { searchCommand } from './search.ts';
import { feedsAddCommand, feedsListCommand, feedsPassCommand, feedsUnpassCommand } from './feeds.ts';

interface Command {
  usage: string;
  summary: string;
  run(args: string[], context: { config: Config; log: Logger }): Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  serve: {
    usage: 'ingest serve [--host H] [--port N]',
    summary: 'run the HTTP sidecar (default 127.0.0.1:8790); boot never walks',
    run: serveCommand,
  },
  health: {
    usage: 'ingest health [--url U]',
    summary: "the container's health check: exit 0 when the sidecar's GET /health answers 200",
    run: healthCommand,
  },
  walk: {
    usage: 'ingest walk [PATH] [--full-reprocess] [--allow-mass-removal] [--rebind-corpus] [--json]',
    summary: 'walk the corpus (PATH, else ENGINE_SOURCE_PATH) once into rows and print a summary',
    run: walkCommand,
  },
  watch: {
    usage: 'ingest watch [PATH] [--quiet-ms N] [--reconcile-s N]',
    summary: 'walk the corpus, then again after every burst of saves (one line per walk); Ctrl-C stops after a commit',
    run: watchCommand,
  },
  'db migrate': {
    usage: 'ingest db migrate',
    summary: 'apply the reference platform schema (idempotent) and print where the database lives',
    async run(args, { config, log }) {
      parseArgs({ args, options: {}, allowPositionals: false });
      const db = await openDatabase(config, { bootstrap: false, uses: [] });
      try {
        const report = await migrate(db);
        for (const m of report.applied) log.info({ version: m.version, name: m.name }, 'migration applied');
        process.stdout.write(
          `database: ${db.kind} at ${db.location}\n` +
            `migrations: ${report.applied.length} applied now, ${report.alreadyApplied} already applied\n`,
        );
        return 0;
      } finally {
        await db.close();
      }
    },
  },
  extract: {
    usage: 'ingest extract [FILE|-]',
    summary: 'clean one HTML file (or stdin) to its main text, as POST /extract does; prints the result as JSON',
    run: extractCommand,
  },
  preflight: {
    usage: 'ingest preflight',
    summary: 'send one cheap message to the configured model endpoint; non-zero exit on a dead key',
    run: preflightCommand,
  },
  nightly: {
    usage: 'ingest nightly --tier mock|gateway|vendor [--sidecar URL] [--timeout S] [--full-reprocess] [--json]',
    summary: 'the nightly lane against a running sidecar: tier check, preflight or mock health, a walk, rows landed',
    run: nightlyCommand,
  },
  mock: {
    usage: 'ingest mock [--host H] [--port N] [--latency-ms N] [--fault-rate F] [--auth-token T]',
    summary: 'run the mock model server (tier 1) alone',
    run: mockCommand,
  },
  'check-url': {
    usage: 'ingest check-url URL...',
    summary: 'apply the SSRF policy to each URL (DNS only, no connection); one JSON line per URL',
    run: checkUrlCommand,
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
    run: feedsAddCommand,
  },
  'feeds list': {
    usage: 'ingest feeds list [--passed|--unpassed] [--json]',
    summary: 'the feed_articles ledger: each row passed or not, linked to its reference item or not',
    run: feedsListCommand,
  },
  'feeds pass': {
    usage: 'ingest feeds pass URL... [--write-platform-ledger]',
    summary: "set passed on the URL's ledger rows: the next walk fetches it",
    run: feedsPassCommand,
  },
  'feeds unpass': {
    usage: 'ingest feeds unpass URL... [--write-platform-ledger]',
    summary: "clear passed on the URL's ledger rows: the next walk retracts its derived rows",
    run: feedsUnpassCommand,
  },
  'entities list': {
    usage: 'ingest entities list [--pinned] [--limit N] [--json]',
    summary: 'the entities stage 5 resolved: canonical names by mentions, pinned ones marked',
    run: entitiesListCommand,
  },
  'entities show': {
    usage: 'ingest entities show <mention id> [--json]',
    summary: "one mention's entity: the names that chain under it and all its mentions",
    run: entitiesShowCommand,
  },
  'entities merge': {
    usage: 'ingest entities merge --into <mention id> <mention id>...',
    summary: "merge the mentions' entities into the target's and pin the survivors (an admin merge)",
    run: entitiesMergeCommand,
  },
  'qa proposals': {
    usage: 'ingest qa proposals [--status proposed|accepted|rejected] [--limit N] [--json]',
    summary: 'the Q&A dedup proposals of stage 5, the most similar first, both pairs side by side',
    run: qaProposalsCommand,
  },
  'qa decide': {
    usage: 'ingest qa decide <proposal id> accept|reject',
    summary: 'record a decision on a Q&A dedup proposal (walks never change it again)',
    run: qaDecideCommand,
  },
  produce: {
    usage: 'ingest produce [--all] [--redraft] [--json]',
    summary: 'one producer run: redraft the bundle concepts whose evidence moved (--all: look at every concept)',
    run: produceCommand,
  },
  'bundle check': {
    usage: 'ingest bundle check [DIR] [--json]',
    summary: 'check a knowledge bundle (default: the published one): OKF 0.1 conformance, listings, citations',
    run: bundleCheckCommand,
  },
  worker: {
    usage: 'ingest worker [--concurrency N]',
    summary: 'run the bid-worker: poll processing_queue for analyse_form and template_fill jobs (no HTTP server)',
    run: workerCommand,
  },
  'worker health': {
    usage: 'ingest worker health',
    summary: "the bid-worker container's health check: exit 0 while its heartbeat is fresh",
    run: workerHealthCommand,
  },
  'jobs enqueue': {
    usage:
      'ingest jobs enqueue analyse_form|template_fill (FILE | --bucket-key KEY | --analysis JOB_ID) [--evidence-k N] [--max-attempts N]',
    summary: 'queue a bid-worker job with the payload the platform would send; prints its id',
    run: jobsEnqueueCommand,
  },
  'jobs list': {
    usage: 'ingest jobs list [--status queued|running|done|failed] [--limit N] [--json]',
    summary: 'the bid-worker jobs, newest first, with their attempts and errors',
    run: jobsListCommand,
  },
  'jobs show': {
    usage: 'ingest jobs show ID',
    summary: 'one job with its payload and result, as JSON',
    run: jobsShowCommand,
  },
  'jobs retry': {
    usage: 'ingest jobs retry ID',
    summary: 'queue a failed job again with its attempts reset',
    run: jobsRetryCommand,
  },
  'jobs schema': {
    usage: 'ingest jobs schema analyse_form.payload|analyse_form.result|template_fill.payload|template_fill.result',
    summary: 'print the JSON Schema of a job payload or result',
    run: (args) => jobsSchemaCommand(args),
  },
  search: {
    usage: 'ingest search QUERY [--k N] [--json]',
    summary: 'the evidence template_fill retrieves for a question: Q&A pairs, chunks, entity facts, with citations',
    run: searchCommand,
  },
  'state verify': {
    usage: 'ingest state verify',
    summary: 'inspect the engine state store (format version, memo counts, bound database)',
    run: stateVerifyCommand,
  },
  'state reset': {
    usage: 'ingest state reset --yes',
    summary: 'delete the engine state store; the next walk re-extracts everything',
    run: stateResetCommand,
  },
};

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

export function helpText(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  const lines = Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`);
  return `usage: ingest <command> [options]\n\ncommands:\n${lines.join('\n')}\n  ${'ingest --help'.padEnd(width)}  show this help\n`;
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
  const resolved = resolveCommand(argv);
  if (resolved === null) {
    process.stderr.write(`ingest: unknown command "${argv.join(' ')}"\n\n${helpText()}`);
    return 2;
  }
  if (resolved.rest.includes('--help') || resolved.rest.includes('-h')) {
    process.stdout.write(`usage: ${resolved.command.usage}\n  ${resolved.command.summary}\n`);
    return 0;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ingest: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const log = createLogger(config);
  try {
    return await resolved.command.run(resolved.rest, { config, log });
  } catch (error) {
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`ingest: ${error.message}\nusage: ${resolved.command.usage}\n`);
      return 2;
    }
    log.error({ err: error }, 'command failed');
    process.stderr.write(lineScrubber(config.secretValues)(`ingest: ${(error as Error).message}\n`));
    return 1;
  }
}
