// The /extract thread pool: the real piscina pool running the real cleaner in worker threads.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createExtractPool, type ExtractPool } from '../http/extract-pool.ts';
import { HttpError } from '../http/errors.ts';
import { cleanHtml } from '../stages/convert/html/index.ts';

let pool: ExtractPool | null = null;
test.after.each(async () => {
  await pool?.close();
  pool = null;
});

const heavy = `<html><body><table>${'<tr><td>cell</td><td>x</td></tr>'.repeat(100_000)}</table></body></html>`;

test('a page cleaned in the pool comes back exactly as the cleaner makes it, from a string or from bytes', async () => {
  pool = createExtractPool({ threads: 1, maxQueue: 4 });
  const page =
    '<html><head><meta charset="windows-1252"><title>T</title></head><body><nav><a href="/">Home</a></nav><article><h2>Caf\u00e9</h2><p>' +
    'Prose of the article. '.repeat(30) +
    '</p></article></body></html>';
  const { text, verdict, warnings } = cleanHtml(page);
  assert.equal(await pool.clean(page), { text, verdict, warnings });
  const bytes = Uint8Array.from(Buffer.from(page, 'latin1'));
  const fromBytes = cleanHtml(bytes);
  assert.equal(await pool.clean(bytes), {
    text: fromBytes.text,
    verdict: fromBytes.verdict,
    warnings: fromBytes.warnings,
  });
});

test('past threads + queue, a request is refused at once with a named 503; the admitted ones finish', async () => {
  pool = createExtractPool({ threads: 1, maxQueue: 1 });
  const first = pool.clean(heavy);
  const second = pool.clean(heavy);
  try {
    await pool.clean('<p>one too many</p>');
    assert.unreachable('the third request must be refused');
  } catch (error) {
    assert.instance(error, HttpError);
    assert.equal(
      [(error as HttpError).status, (error as HttpError).error, (error as HttpError).headers['retry-after']],
      [503, 'extract_busy', '1'],
    );
  }
  const expected = cleanHtml(heavy).text;
  assert.equal(
    (await Promise.all([first, second])).map((d) => d.text),
    [expected, expected],
  );
  assert.is((await pool.clean('<p>room again</p>')).text, 'room again', 'slots are given back');
});

test.run();
