// A deadline for one piece of work, as the abort signal handed to it.
//
// Not AbortSignal.timeout: its timer lives until the deadline whatever the work did, and keeps
// the signal and every listener put on it (an SDK's controller, fetch's request) alive until
// then. A walk makes thousands of model calls a minute against a 3-minute deadline; with
// AbortSignal.timeout, 7,500 documents in, 64,000 such signals were live (bench/README.md).

export async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`the deadline of ${ms} ms passed`, 'TimeoutError')),
    ms,
  );
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
