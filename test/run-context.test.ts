// The run context (lib/run-context.ts): a walk's events count into its own context only, the
// last walk's stays readable after it, and its op_id reaches every log line written in it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Writable } from 'node:stream';
import { loadConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { countEvent, currentRunContext, inRunContext, publishRunContext } from '../lib/run-context.ts';

test("an event outside any run context counts nowhere, not into the last walk's counters", () => {
  const last = publishRunContext('00000000-0000-4000-8000-00000000000a', false);
  inRunContext(last, () => countEvent('model_retry'));
  countEvent('model_retry');
  countEvent('memo_heal', 3);
  assert.is(last.counters.model_retry, 1, 'counted once, in its walk');
  assert.is(last.counters.memo_heal, 0);
  assert.is(currentRunContext().opId, last.opId, 'the last walk stays readable after it');
});

test('a log line written in a run context names its op_id, once; outside, none', () => {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const log = createLogger(loadConfig({}, '/'), { destination });
  const run = publishRunContext('00000000-0000-4000-8000-00000000000b', false);
  inRunContext(run, () => log.child({ path: 'a.md' }).info('item done'));
  log.info('outside');
  assert.is(lines.length, 2);
  assert.equal(
    lines.map((line) => (line.match(/"opId"/g) ?? []).length),
    [1, 0],
  );
  assert.is(JSON.parse(lines[0]!).opId, run.opId);
});

test.run();
