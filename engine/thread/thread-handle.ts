// The main thread's handle on the engine worker: starts it, forwards walk and merge requests,
// and knows whether it is alive (GET /health answers 503 once it has died).

import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../lib/config.ts';
import type { Logger } from '../../lib/log.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import { ENGINE_THREAD_LIMITS } from '../../lib/v8-flags.ts';
import type { FromEngine, ToEngine } from './thread.ts';
import type { WalkFlags } from '../walk/walk.ts';
import type { MergeRequest } from '../../stages/resolve/merge.ts';

type WalkDone = Extract<FromEngine, { type: 'walk-done' }>;
type MergeDone = Extract<FromEngine, { type: 'merge-done' }>;
type ProduceAnswer = Extract<FromEngine, { type: 'produce-started' | 'produce-refused' }>;

export class EngineThread {
  readonly #worker: Worker;
  readonly #pending = new Map<string, { onRunning: () => void; resolve: (done: WalkDone) => void }>();
  readonly #merges = new Map<string, (done: MergeDone) => void>();
  readonly #produces = new Map<string, (answer: ProduceAnswer) => void>();
  readonly #scrapes = new Map<string, (text: string) => void>();
  #alive = true;
  readonly ready: Promise<void>;

  constructor(config: Config, log: Logger) {
    this.#worker = new Worker(new URL('./thread.ts', import.meta.url), {
      workerData: config,
      resourceLimits: ENGINE_THREAD_LIMITS,
    });
    this.ready = new Promise((resolve, reject) => {
      this.#worker.on('message', (message: FromEngine) => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'walk-running') this.#pending.get(message.requestId)?.onRunning();
        else if (message.type === 'merge-done') {
          this.#merges.get(message.requestId)?.(message);
          this.#merges.delete(message.requestId);
        } else if (message.type === 'produce-started' || message.type === 'produce-refused') {
          this.#produces.get(message.requestId)?.(message);
          this.#produces.delete(message.requestId);
        } else if (message.type === 'metrics-text') {
          this.#scrapes.get(message.requestId)?.(message.text);
          this.#scrapes.delete(message.requestId);
        } else {
          this.#pending.get(message.requestId)?.resolve(message);
          this.#pending.delete(message.requestId);
        }
      });
      this.#worker.on('error', (error) => {
        log.error({ err: error }, 'engine worker crashed');
        reject(error);
      });
      this.#worker.on('exit', (code) => {
        this.#alive = false;
        if (code !== 0) log.error({ code }, 'engine worker exited');
        for (const [requestId, pending] of this.#pending)
          pending.resolve({ type: 'walk-done', requestId, state: 'failed', error: 'the engine worker exited' });
        this.#pending.clear();
        for (const [requestId, resolve] of this.#merges)
          resolve({ type: 'merge-done', requestId, error: { message: 'the engine worker exited' } });
        this.#merges.clear();
        for (const [requestId, resolve] of this.#produces)
          resolve({ type: 'produce-refused', requestId, busy: false, message: 'the engine worker exited' });
        this.#produces.clear();
        for (const resolve of this.#scrapes.values()) resolve('');
        this.#scrapes.clear();
      });
    });
    this.ready.catch(() => {});
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** Asks for one walk; resolves with its terminal state. */
  walk(
    requestId: string,
    flags: WalkFlags,
    failStage5: FailStage5Mode | null,
    onRunning: () => void,
  ): Promise<WalkDone> {
    if (!this.#alive)
      return Promise.resolve({
        type: 'walk-done',
        requestId,
        state: 'failed',
        error: 'the engine worker is not running',
      });
    return new Promise((resolve) => {
      this.#pending.set(requestId, { onRunning, resolve });
      this.#worker.postMessage({ type: 'walk', requestId, flags, failStage5 } satisfies ToEngine);
    });
  }

  /** Asks for one admin merge; it runs after the walk in progress, if any. */
  merge(request: MergeRequest): Promise<MergeDone> {
    const requestId = randomUUID();
    if (!this.#alive)
      return Promise.resolve({ type: 'merge-done', requestId, error: { message: 'the engine worker is not running' } });
    return new Promise((resolve) => {
      this.#merges.set(requestId, resolve);
      this.#worker.postMessage({ type: 'merge', requestId, request } satisfies ToEngine);
    });
  }

  /** Asks for a producer run over every concept; resolves once it started or was refused. */
  produce(redraft: boolean): Promise<ProduceAnswer> {
    const requestId = randomUUID();
    if (!this.#alive)
      return Promise.resolve({
        type: 'produce-refused',
        requestId,
        busy: false,
        message: 'the engine worker is not running',
      });
    return new Promise((resolve) => {
      this.#produces.set(requestId, resolve);
      this.#worker.postMessage({ type: 'produce', requestId, redraft } satisfies ToEngine);
    });
  }

  /** The engine thread's metrics in the Prometheus text format; empty once the thread is gone. */
  metrics(): Promise<string> {
    if (!this.#alive) return Promise.resolve('');
    const requestId = randomUUID();
    return new Promise((resolve) => {
      this.#scrapes.set(requestId, resolve);
      this.#worker.postMessage({ type: 'metrics', requestId } satisfies ToEngine);
    });
  }

  /** Graceful: the engine closes its pools; ends the thread if it has not within the grace. */
  async shutdown(graceMs: number): Promise<void> {
    if (!this.#alive) return;
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.postMessage({ type: 'shutdown' } satisfies ToEngine);
    const timer = setTimeout(() => void this.#worker.terminate(), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** Ends the thread at once (a crash, as far as /health is concerned). */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}
