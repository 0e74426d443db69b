// The main thread's handle on the engine thread (engine/thread/thread-handle.ts): every call in
// flight answered by the message of its own kind, a message answering no call refused and
// logged, and every call answered once the thread is gone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Writable } from 'node:stream';
import { loadConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { EngineThread } from '../engine/thread/thread-handle.ts';

function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const config = loadConfig({}, '/');
  return { config, lines, log: createLogger(config, { destination }) };
}

test('a walk is answered by its own walk-done; messages answering no call are refused, not taken for it', async () => {
  const { config, lines, log } = capturedLogger();
  const thread = new EngineThread(config, log, new URL('./helpers/speaking-thread.ts', import.meta.url));
  await thread.ready;
  let running = false;
  const done = await thread.walk('walk-1', {}, null, () => (running = true));
  assert.is(done.state, 'completed');
  assert.is(done.opId, 'op-of-the-walk');
  assert.ok(running, 'walk-running reached the caller');
  assert.is(await thread.metrics(), 'ingest_up 1\n');
  const refused = lines.filter((l) => String(l.msg).includes('answering no call'));
  assert.equal(
    refused.map((l) => l.type),
    ['merge-done', 'no-such-message', 'walk-done'],
  );
  await thread.shutdown(5_000);
  assert.not.ok(thread.alive);
  const after = await thread.walk('walk-2', {}, null, () => {});
  assert.is(after.state, 'failed');
  assert.is(await thread.metrics(), '');
});

test.run();
