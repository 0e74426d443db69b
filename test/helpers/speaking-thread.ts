// An engine thread for test/engine-thread.test.ts: it answers a walk first with messages that
// answer no call (another call's kind, a type of no call, a request nobody made), then as the
// real engine thread does.

import { parentPort } from 'node:worker_threads';

const port = parentPort!;
port.postMessage({ type: 'ready' });
port.on('message', (message: { type: string; requestId?: string }) => {
  const { requestId } = message;
  if (message.type === 'walk') {
    port.postMessage({ type: 'merge-done', requestId, error: { message: 'a merge nobody asked for' } });
    port.postMessage({ type: 'no-such-message', requestId });
    port.postMessage({ type: 'walk-done', requestId: 'a request nobody made', state: 'failed' });
    port.postMessage({ type: 'walk-running', requestId });
    port.postMessage({ type: 'walk-done', requestId, state: 'completed', opId: 'op-of-the-walk' });
  } else if (message.type === 'metrics') {
    port.postMessage({ type: 'metrics-text', requestId, text: 'ingest_up 1\n' });
  } else if (message.type === 'shutdown') port.close();
});
