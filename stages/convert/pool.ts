// A small pool of converter child processes with a hard timeout and a hard memory cap per job.
//
// Why child processes and not worker threads: a worker's resourceLimits cap only the JS heap,
// not the buffers a zip or PDF inflates into, and a V8 out-of-memory in mammoth aborts the
// whole process (docs/behaviour/limits.md#conversion-limits). Why not a pool library: the cap we
// need is on the child's resident memory, watched from outside (a hung child cannot report on
// itself), and ended by SIGKILL; the pools we looked at (workerpool, piscina) expose neither the
// child's pid per job nor a memory kill.
//
// Each child runs one job at a time. The parent reads the child's VmRSS from /proc while the
// job runs and kills it past `memoryMb`; a timer kills it past `timeoutMs`; a killed or
// crashed child is replaced by a fresh one for the next job.

import { fork, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { JobReply } from './answer-jobs.ts';
import { ConversionError, type ConversionErrorCode } from './errors.ts';
import type { Converted, FormBlock, MediaType } from './types.ts';
import { metrics } from '../../lib/metrics.ts';

export interface ChildLimits {
  maxPages: number;
  maxCells: number;
  maxEntries: number;
  maxInflatedBytes: number;
}

export interface ChildJob {
  id: number;
  /** text: the document's text (the walk); blocks: its addressed blocks (the bid-worker's forms). */
  want: 'text' | 'blocks';
  mediaType: MediaType;
  bytes: Uint8Array;
  limits: ChildLimits;
}

export interface PoolOptions {
  workers: number;
  timeoutMs: number;
  memoryMb: number;
  /** The children's script: the converter's by default, the OCR engine's for stages/ocr/. */
  script?: string;
  /** What the kills call the child: "the converter" by default. */
  name?: string;
  /** The code a crashed child's job fails with. */
  crashCode?: ConversionErrorCode;
  /** Variables the children get beside the parent's environment. */
  env?: Readonly<Record<string, string>>;
  /**
   * A job made of steps (OCR pages): the child says `{ id, step: true }` after each, and a step
   * taking longer than this is killed as a timeout, beside the job's own `timeoutMs`.
   */
  stepTimeoutMs?: number;
}

/** Any job a pool's child takes: the pool adds its id. */
export type PoolJob = object;

/** A child's answer to a job (answer-jobs.ts), or its word that one step of the job is done. */
type Reply = JobReply<unknown> & { step?: true };

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));
const RSS_POLL_MS = 50;
const STDERR_TAIL = 4096;

interface Pending {
  job: PoolJob & { id: number };
  resolve: (result: unknown) => void;
  reject: (error: ConversionError) => void;
}

interface Slot {
  child: ChildProcess | null;
  stderr: string;
  busy: Pending | null;
}

export class ConverterPool {
  readonly #options: PoolOptions;
  readonly #slots: Slot[];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: PoolOptions) {
    this.#options = options;
    this.#slots = Array.from({ length: options.workers }, () => ({ child: null, stderr: '', busy: null }));
  }

  run(mediaType: MediaType, bytes: Uint8Array, limits: ChildLimits): Promise<Converted> {
    return this.job<Converted>({ want: 'text', mediaType, bytes, limits } satisfies Omit<ChildJob, 'id'>);
  }

  blocks(mediaType: MediaType, bytes: Uint8Array, limits: ChildLimits): Promise<FormBlock[]> {
    return this.job<FormBlock[]>({ want: 'blocks', mediaType, bytes, limits } satisfies Omit<ChildJob, 'id'>);
  }

  /** One job for the pool's child script, answered with what the child replies. */
  job<T>(job: PoolJob): Promise<T> {
    if (this.#closed) return Promise.reject(this.#crashed(`${this.#name} pool is closed`));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ job: { ...job, id: this.#nextId++ }, resolve: resolve as (result: unknown) => void, reject });
      this.#dispatch();
    });
  }

  get #name(): string {
    return this.#options.name ?? 'the converter';
  }

  #crashed(message: string): ConversionError {
    return new ConversionError(this.#options.crashCode ?? 'converter_crashed', message);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of this.#queue.splice(0)) pending.reject(this.#crashed(`${this.#name} pool closed`));
    await Promise.all(this.#slots.map((slot) => this.#stop(slot)));
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (slot.busy !== null) continue;
      const pending = this.#queue.shift();
      if (pending === undefined) return;
      this.#start(slot, pending);
    }
  }

  #spawn(slot: Slot): ChildProcess {
    const child = fork(this.#options.script ?? CHILD, [], {
      execArgv: [`--max-old-space-size=${this.#options.memoryMb}`],
      ...(this.#options.env === undefined ? {} : { env: { ...process.env, ...this.#options.env } }),
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    slot.stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      slot.stderr = (slot.stderr + text).slice(-STDERR_TAIL);
    });
    child.on('exit', (code, signal) => {
      // A child killed by settle() was already detached; the slot may be serving a new one.
      if (slot.child !== child) return;
      slot.child = null;
      const pending = slot.busy;
      if (pending === null) return;
      slot.busy = null;
      const outOfMemory = /heap out of memory|Allocation failed|ERR_WORKER_OUT_OF_MEMORY/.test(slot.stderr);
      const ended = outOfMemory
        ? new ConversionError('memory_limit', `${this.#name} ran out of its ${this.#options.memoryMb} MB heap`)
        : this.#crashed(`${this.#name} exited (${signal ?? `code ${code}`})`);
      metrics.converterKills.inc({ reason: ended.code });
      pending.reject(ended);
      this.#dispatch();
    });
    child.on('error', () => {});
    slot.child = child;
    return child;
  }

  #start(slot: Slot, pending: Pending): void {
    const child = slot.child ?? this.#spawn(slot);
    slot.busy = pending;
    child.ref();
    child.channel?.ref();
    const settle = (kill: ConversionError | null, reply?: Reply) => {
      clearTimeout(timer);
      clearTimeout(stepTimer);
      clearInterval(watch);
      child.off('message', onMessage);
      if (slot.busy !== pending) return;
      if (kill !== null) {
        // The exit handler must not report this job a second time.
        slot.busy = null;
        slot.child = null;
        child.kill('SIGKILL');
        metrics.converterKills.inc({ reason: kill.code });
        pending.reject(kill);
      } else if (reply !== undefined) {
        slot.busy = null;
        child.unref();
        child.channel?.unref();
        if (reply.ok) pending.resolve(reply.result);
        else pending.reject(new ConversionError(reply.code, reply.message));
      }
      this.#dispatch();
    };
    const { timeoutMs, stepTimeoutMs, memoryMb } = this.#options;
    let stepTimer: NodeJS.Timeout | undefined;
    const armStep = () => {
      if (stepTimeoutMs === undefined) return;
      clearTimeout(stepTimer);
      stepTimer = setTimeout(
        () => settle(new ConversionError('timeout', `one page took ${this.#name} longer than ${stepTimeoutMs} ms`)),
        stepTimeoutMs,
      );
    };
    const onMessage = (reply: Reply) => {
      if (reply.id !== pending.job.id) return;
      if (reply.step === true) armStep();
      else settle(null, reply);
    };
    const timer = setTimeout(
      () => settle(new ConversionError('timeout', `${this.#name} took longer than ${timeoutMs} ms`)),
      timeoutMs,
    );
    armStep();
    const watch = setInterval(() => {
      void residentMb(child.pid).then((mb) => {
        if (mb !== null && mb > memoryMb) {
          settle(new ConversionError('memory_limit', `${this.#name} passed ${memoryMb} MB of memory`));
        }
      });
    }, RSS_POLL_MS);
    child.on('message', onMessage);
    child.send(pending.job);
  }

  async #stop(slot: Slot): Promise<void> {
    const child = slot.child;
    slot.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    // An idle child is unreferenced; hold the loop open until it is really gone.
    child.ref();
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }
}

async function residentMb(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => null);
  const kb = status === null ? null : /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
  return kb === undefined || kb === null ? null : Number(kb) / 1024;
}
