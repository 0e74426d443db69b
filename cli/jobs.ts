// `ingest jobs enqueue | list | show | retry | schema`: the bid-worker's queue for operators and
// tests. enqueue builds the payload the way the platform would: a FILE inside the corpus
// directory by its corpus-relative path, any other by its bytes inline, a bucket key as given.

import { randomUUID } from 'node:crypto';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import type { FormRef } from '../worker/payloads.ts';
import { JOB_SCHEMAS } from '../worker/payloads.ts';
import {
  enqueueJob,
  getJob,
  JOB_NAMES,
  JOB_STATUSES,
  listJobs,
  retryJob,
  type JobName,
  type JobStatus,
} from '../worker/queue.ts';
import { usageError } from './usage.ts';
import { withDatabase } from './with-database.ts';

interface Context {
  config: Config;
  log: Logger;
}

const wholeNumber = (value: string, name: string, min: number, max: number): number => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw usageError(`${name} must be a whole number from ${min} to ${max}`);
  return n;
};

/** FILE as the platform would name it: corpus-relative inside the corpus, else inline bytes. */
async function formRef(file: string, config: Config): Promise<FormRef> {
  const absolute = await realpath(path.resolve(file)).catch(() => {
    throw usageError(`${file}: no such file`);
  });
  if (config.sourcePath !== null) {
    const corpus = await realpath(config.sourcePath).catch(() => null);
    if (corpus !== null && absolute.startsWith(corpus + path.sep))
      return { path: path.relative(corpus, absolute).split(path.sep).join('/') };
  }
  const bytes = await readFile(absolute);
  if (bytes.byteLength > config.worker.inlineMaxBytes)
    throw usageError(
      `${file} is ${bytes.byteLength} bytes, over INGEST_WORKER_INLINE_MAX_BYTES; stage it into the corpus first`,
    );
  return { inline: { filename: path.basename(absolute), base64: bytes.toString('base64') } };
}

export async function jobsEnqueueCommand(args: string[], { config }: Context): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      'bucket-key': { type: 'string' },
      analysis: { type: 'string' },
      'evidence-k': { type: 'string' },
      'max-attempts': { type: 'string', default: '3' },
    },
    allowPositionals: true,
  });
  const [job, file, ...rest] = positionals;
  if (!JOB_NAMES.includes(job as JobName)) throw usageError(`the job must be one of ${JOB_NAMES.join(', ')}`);
  if (rest.length > 0) throw usageError('one FILE at most');
  const sources = [file !== undefined, values['bucket-key'] !== undefined, values.analysis !== undefined];
  if (sources.filter(Boolean).length !== 1)
    throw usageError(
      job === 'template_fill'
        ? 'give one of FILE, --bucket-key KEY or --analysis JOB_ID'
        : 'give FILE or --bucket-key KEY',
    );
  if (job === 'analyse_form' && values.analysis !== undefined) throw usageError('--analysis is for template_fill');
  const form: FormRef | null =
    file !== undefined
      ? await formRef(file, config)
      : values['bucket-key'] !== undefined
        ? { bucket_key: values['bucket-key'] }
        : null;
  const payload: Record<string, unknown> = form === null ? { analysis_job: values.analysis } : { form };
  if (values['evidence-k'] !== undefined) {
    if (job !== 'template_fill') throw usageError('--evidence-k is for template_fill');
    payload.evidence_k = wholeNumber(values['evidence-k'], '--evidence-k', 1, 50);
  }
  const id = randomUUID();
  await withDatabase(config, (db) =>
    enqueueJob(db, {
      id,
      job: job as JobName,
      payload,
      maxAttempts: wholeNumber(values['max-attempts'], '--max-attempts', 1, 100),
    }),
  );
  process.stdout.write(`${id}\n`);
  return 0;
}

export async function jobsListCommand(args: string[], { config }: Context): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      status: { type: 'string' },
      limit: { type: 'string', default: '100' },
      json: { type: 'boolean', default: false },
    },
  });
  if (values.status !== undefined && !JOB_STATUSES.includes(values.status as JobStatus))
    throw usageError(`--status must be one of ${JOB_STATUSES.join(', ')}`);
  const limit = wholeNumber(values.limit, '--limit', 1, 100_000);
  const jobs = await withDatabase(config, (db) => listJobs(db, { status: values.status as JobStatus, limit }));
  if (values.json) {
    process.stdout.write(`${JSON.stringify(jobs)}\n`);
    return 0;
  }
  if (jobs.length === 0) process.stdout.write('no jobs\n');
  for (const j of jobs)
    process.stdout.write(
      `${j.id}  ${j.job.padEnd(13)}  ${j.status.padEnd(7)}  attempts ${j.attempts}/${j.max_attempts}  ` +
        `${new Date(j.updated_at).toISOString()}${j.error === null ? '' : `  ${j.error}`}\n`,
    );
  return 0;
}

export async function jobsShowCommand(args: string[], { config }: Context): Promise<number> {
  const { positionals } = parseArgs({
    args,
    options: { json: { type: 'boolean', default: true } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw usageError('give one job id');
  const job = await withDatabase(config, (db) => getJob(db, positionals[0]!).catch(() => null));
  if (job === null) {
    process.stderr.write(`ingest: no job ${positionals[0]}\n`);
    return 1;
  }
  process.stdout.write(`${JSON.stringify(job, null, 2)}\n`);
  return 0;
}

export async function jobsRetryCommand(args: string[], { config }: Context): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
  if (positionals.length !== 1) throw usageError('give one job id');
  const id = positionals[0]!;
  return withDatabase(config, async (db) => {
    const before = await getJob(db, id).catch(() => null);
    if (before === null) {
      process.stderr.write(`ingest: no job ${id}\n`);
      return 1;
    }
    if ((await retryJob(db, id)) === null) {
      process.stderr.write(`ingest: job ${id} is ${before.status}; only a failed job is retried\n`);
      return 1;
    }
    process.stdout.write(`job ${id} queued again (attempts reset)\n`);
    return 0;
  });
}

export async function jobsSchemaCommand(args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
  const schema = JOB_SCHEMAS[positionals[0] ?? ''];
  if (positionals.length !== 1 || schema === undefined)
    throw usageError(`give one of ${Object.keys(JOB_SCHEMAS).join(', ')}`);
  process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
  return 0;
}
