// The walk's backpressure: it reads the corpus no further while every in-flight slot is taken
// and an item already waits for one.
//
// Not PQueue's onSizeLessThan(): it listens for two events ('next', 'active') under one
// AbortSignal, and Node keeps only the last of a signal's removals per event target alive
// through a garbage collection (nodejs/node#63954, still in Node 24.21). After a collection
// during the wait, the 'next' listener outlived its abort, with its closure, the walked item
// it held, and the 64 KB buffer-pool slab under that item's path: about one every hundred
// documents, 11 MB at 16,000 (heap snapshot), the walk's slow memory creep. events.once
// removes its listener when it fires.

import { once } from 'node:events';
import type PQueue from 'p-queue';

/** Resolves once no task waits in the queue (every waiting task has started). */
export async function untilNoneWaiting(queue: PQueue): Promise<void> {
  // A task waits only while every slot runs one, so a completion ('next') always follows.
  while (queue.size > 0) await once(queue, 'next');
}
