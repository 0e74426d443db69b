// Structured logging (pino). JSON lines by default, human-readable when the log goes to a
// terminal. Logs go to stderr so that stdout carries only a command's own output
// (`ingest walk --json`, `ingest extract`). On a terminal each record is one line (an error's
// stack aside), printed synchronously above the walk's progress bar (lib/terminal.ts).
//
// Secrets are removed in two layers, because one is not enough: pino's path redaction
// censors fields whose *names* say they hold a credential, and a final pass over every
// serialised line removes the *values* of the configured secrets, bearer tokens and URL
// passwords wherever they appear (inside a message, an error's text, a nested field).

import { pino, type Logger, type DestinationStream } from 'pino';
import { runningOpId } from './run-context.ts';
import { prettyFactory } from 'pino-pretty';
import type { Config } from './config.ts';
import { stderrLines } from './terminal.ts';

export type { Logger };

const CENSOR = '[REDACTED]';
/** Secrets shorter than this are not scrubbed by value: replacing "ab" everywhere would shred the log. */
const MIN_SCRUBBED_SECRET_LENGTH = 4;

const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
  'apiKey',
  '*.apiKey',
  'authToken',
  '*.authToken',
  'token',
  '*.token',
  'secret',
  '*.secret',
];

export interface LoggerOptions {
  /** Where lines go; defaults to stderr (pretty when stderr is a terminal). */
  destination?: DestinationStream;
}

/** Readable records for a person at the terminal, each written above the status line there. */
function terminalDestination(): DestinationStream {
  const prettify = prettyFactory({ colorize: true, singleLine: true, ignore: 'pid,hostname' });
  return { write: (line: string) => stderrLines.print(prettify(line)) };
}

export function createLogger(config: Pick<Config, 'log' | 'secretValues'>, options: LoggerOptions = {}): Logger {
  const scrub = lineScrubber(config.secretValues);
  const destination =
    options.destination ??
    (stderrLines.isTerminal ? terminalDestination() : pino.destination({ dest: 2, sync: false }));
  return pino(
    {
      level: config.log.level,
      redact: { paths: REDACTED_PATHS, censor: CENSOR },
      hooks: { streamWrite: scrub },
      // A walk's lines name its op_id wherever they are logged from (lib/run-context.ts).
      mixin: () => {
        const opId = runningOpId();
        return opId === undefined ? {} : { opId };
      },
    },
    destination,
  );
}

/** Builds the final-pass scrubber applied to every serialised log line. */
export function lineScrubber(secretValues: readonly string[]): (line: string) => string {
  const needles = secretValues
    .filter((s) => s.length >= MIN_SCRUBBED_SECRET_LENGTH)
    // A secret may appear raw or JSON-escaped (quotes, backslashes, control characters).
    .flatMap((s) => [s, JSON.stringify(s).slice(1, -1)])
    .sort((a, b) => b.length - a.length);
  const secretPattern = needles.length > 0 ? new RegExp([...new Set(needles)].map(escapeRegExp).join('|'), 'g') : null;
  return (line) => {
    let out = secretPattern === null ? line : line.replace(secretPattern, CENSOR);
    out = out.replace(/\b(Bearer\s+)[^\s"\\,]+/gi, `$1${CENSOR}`);
    out = out.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^:/@\s"]*:)[^@\s"/]+@/gi, `$1${CENSOR}@`);
    return out;
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
