// The main thread's handle on the engine worker: starts it, forwards walk and merge requests,
// and knows whether it is alive (GET /health answers 503 once it has died).

import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../lib/config.ts';
import type { Logger } from '../../lib/log.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import { ENGINE_THREAD_LIMITS } from '../../lib/v8-flags.ts';
import type { FromEngine, ToEngine } from './thread.ts';
import type { WalkFlags } from '../walk/walk-options.ts';
import type { MergeRequest } from '../../stages/resolve/merge.ts';

type WalkDone = Extract<FromEngine, { type: 'walk-done' }>;
type MergeDone = Extract<FromEngine, { type: 'merge-done' }>;
type ProduceAnswer = Extract<FromEngine, { type: 'produce-started' | 'produce-refused' }>;

/** What each kind of call is answered with. */
interface Answers {
  walk: WalkDone;
  merge: MergeDone;
  produce: ProduceAnswer;
  metrics: string;
}

/** A call in flight: its kind, who hears its answer, and (a walk) who hears that it started. */
type Call = {
  [K in keyof Answers]: { kind: K; resolve: (answer: Answers[K]) => void; onRunning?: () => void };
}[keyof Answers];

/** The kind of call each answering message ends (walk-running only tells that a walk started). */
const ANSWERING: Readonly<Record<Exclude<FromEngine['type'], 'ready'>, keyof Answers>> = {
  'walk-running': 'walk',
  'walk-done': 'walk',
  'merge-done': 'merge',
  'produce-started': 'produce',
  'produce-refused': 'produce',
  'metrics-text': 'metrics',
};

/** The answer of a call the engine thread cannot give, because it is not running. */
function gone<K extends keyof Answers>(kind: K, requestId: string, why: string): Answers[K] {
  const answers: { [Kind in keyof Answers]: Answers[Kind] } = {
    walk: { type: 'walk-done', requestId, state: 'failed', error: why },
    merge: { type: 'merge-done', requestId, error: { message: why } },
    produce: { type: 'produce-refused', requestId, busy: false, message: why },
    metrics: '',
  };
  return answers[kind];
}

export class EngineThread {
  readonly #worker: Worker;
  readonly #log: Logger;
  /** Every call in flight, by its request id. */
  readonly #calls = new Map<string, Call>();
  #alive = true;
  readonly ready: Promise<void>;

  /** `script`: the engine thread's module; a test names another to speak for it. */
  constructor(config: Config, log: Logger, script: URL = new URL('./thread.ts', import.meta.url)) {
    this.#log = log;
    this.#worker = new Worker(script, { workerData: config, resourceLimits: ENGINE_THREAD_LIMITS });
    this.ready = new Promise((resolve, reject) => {
      this.#worker.on('message', (message: FromEngine) => {
        if (message.type === 'ready') resolve();
        else this.#hear(message);
      });
      this.#worker.on('error', (error) => {
        log.error({ err: error }, 'engine worker crashed');
        reject(error);
      });
      this.#worker.on('exit', (code) => {
        this.#alive = false;
        if (code !== 0) log.error({ code }, 'engine worker exited');
        for (const [requestId, call] of this.#calls)
          this.#answer(call, gone(call.kind, requestId, 'the engine worker exited'));
        this.#calls.clear();
      });
    });
    this.ready.catch(() => {});
  }

  /** An answer from the engine thread to the call it names; anything else is refused, and logged. */
  #hear(message: Exclude<FromEngine, { type: 'ready' }>): void {
    const kind = (ANSWERING as Partial<Record<string, keyof Answers>>)[message.type];
    const call = this.#calls.get(message.requestId);
    if (kind === undefined || call?.kind !== kind) {
      this.#log.error(
        { type: message.type, known: kind !== undefined },
        'engine thread: a message answering no call, refused',
      );
      return;
    }
    if (message.type === 'walk-running') return call.onRunning?.();
    this.#calls.delete(message.requestId);
    this.#answer(call, message.type === 'metrics-text' ? message.text : message);
  }

  #answer(call: Call, answer: Answers[keyof Answers]): void {
    (call.resolve as (answer: Answers[keyof Answers]) => void)(answer);
  }

  /** Sends `message` as call `requestId` of `kind`; answered at once when the thread is not running. */
  #call<K extends keyof Answers>(
    kind: K,
    message: ToEngine & { requestId: string },
    onRunning?: () => void,
  ): Promise<Answers[K]> {
    if (!this.#alive) return Promise.resolve(gone(kind, message.requestId, 'the engine worker is not running'));
    return new Promise((resolve) => {
      this.#calls.set(message.requestId, { kind, resolve, onRunning } as Call);
      this.#worker.postMessage(message);
    });
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
    return this.#call('walk', { type: 'walk', requestId, flags, failStage5 }, onRunning);
  }

  /** Asks for one admin merge; it runs after the walk in progress, if any. */
  merge(request: MergeRequest): Promise<MergeDone> {
    return this.#call('merge', { type: 'merge', requestId: randomUUID(), request });
  }

  /** Asks for a producer run over every concept; resolves once it started or was refused. */
  produce(redraft: boolean): Promise<ProduceAnswer> {
    return this.#call('produce', { type: 'produce', requestId: randomUUID(), redraft });
  }

  /** The engine thread's metrics in the Prometheus text format; empty once the thread is gone. */
  metrics(): Promise<string> {
    return this.#call('metrics', { type: 'metrics', requestId: randomUUID() });
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
