// `ingest produce [--all] [--redraft] [--json]`: one producer run from the command line, as a
// clean walk chains it (the concepts whose rows moved) or, with --all, as POST /producer-run
// does (every concept). --redraft asks the model again even where the memo holds a draft.
// `ingest bundle check [DIR] [--json]`: the bundle's conformance and citations (exit 1 with the
// reasons); DIR defaults to the published bundle of INGEST_BUNDLE_DIR, and when none is
// published yet it says so, where the bundle would be and how one is made.

import { stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { openLifespan } from '../engine/lifespan.ts';
import { withTier1 } from './tier1.ts';
import { publishedBundle } from '../stages/producer/bundle-dir.ts';
import { checkBundle } from '../stages/producer/check.ts';
import { withDatabase } from './with-database.ts';

export async function produceCommand(
  args: string[],
  { config, log }: { config: Config; log: Logger },
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      all: { type: 'boolean', default: false },
      redraft: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  const lifespan = await withTier1(log, () => openLifespan(config, log));
  try {
    const outcome = await lifespan.producer.start({ all: values.all, redraft: values.redraft }).done;
    if (values.json) process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
    else {
      const r = outcome.report;
      process.stdout.write(
        `producer ${outcome.opId} ${outcome.status} in ${(outcome.durationMs / 1000).toFixed(1)} s\n` +
          (r === undefined
            ? `error: ${outcome.error}\n`
            : `concepts: ${r.concepts} in the bundle; ${r.examined} examined, ${r.drafted} drafted, ${r.removed} removed, ${r.failed} failed\n` +
              `files: ${r.files_written} written, ${r.files_kept} unchanged, ${r.files_removed} removed\n` +
              `bundle: ${publishedBundle(config.bundle.dir)}` +
              `${r.files_written + r.files_removed === 0 ? ' (unchanged: the published version is kept)' : ''}\n`),
      );
    }
    return outcome.status === 'completed' ? 0 : 1;
  } finally {
    await lifespan.close();
  }
}

export async function bundleCheckCommand(args: string[], { config }: { config: Config }): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length > 1)
    throw Object.assign(new TypeError('bundle check takes at most one DIR'), {
      code: 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL',
    });
  const dir = positionals[0] === undefined ? publishedBundle(config.bundle.dir) : path.resolve(positionals[0]);
  const published = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!published) {
    const message =
      positionals[0] === undefined
        ? `no knowledge bundle is published yet: it would be at ${dir} ($INGEST_BUNDLE_DIR/current). ` +
          'A producer run publishes one: it follows each walk that changes the corpus, or run `ingest produce` ' +
          '(POST /producer-run on the sidecar)'
        : `${dir} is not a directory: there is no bundle there to check`;
    if (values.json) process.stdout.write(`${JSON.stringify({ dir, error: 'no_bundle', message }, null, 2)}\n`);
    else process.stderr.write(`ingest: ${message}\n`);
    // Nothing there to act on, as for a missing data directory (docs/OPERATIONS.md "Exit codes of the CLI").
    return 2;
  }
  const result = await withDatabase(config, (db) => checkBundle(dir, db));
  if (values.json) process.stdout.write(`${JSON.stringify({ dir, ...result }, null, 2)}\n`);
  else {
    for (const p of result.problems) process.stdout.write(`${p.file}: ${p.problem}\n`);
    process.stdout.write(
      `${dir}: ${result.files} files, ${result.concepts} concepts, ${result.citations} citations; ` +
        `${result.problems.length === 0 ? 'conformant, every citation resolves' : `${result.problems.length} problems`}\n`,
    );
  }
  return result.problems.length === 0 ? 0 : 1;
}
