// The price table of the prefill (lib/llm/prices.ts): a family or a dated snapshot of it is
// priced, the batch rate is half, and a name the table does not know is not guessed.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { priceTokens } from '../lib/llm/prices.ts';

test('a family and its dated snapshots take its price; the batch rate is half of it', () => {
  const tokens = { input: 2_000_000, output: 1_000_000 };
  assert.equal(priceTokens('claude-sonnet-4-5', tokens), { standard: 21, batch: 10.5 });
  assert.equal(priceTokens('claude-sonnet-4-5-20250929', tokens), { standard: 21, batch: 10.5 });
  assert.equal(priceTokens('claude-opus-4-5', tokens), { standard: 35, batch: 17.5 });
});

test('a model the table does not list is unpriced, not priced as a neighbour', () => {
  const tokens = { input: 1_000, output: 1_000 };
  for (const model of ['claude-opus-4-6', 'claude-sonnet-4-5-latest-alias', 'gateway-default', 'claude-opus-4-'])
    assert.is(priceTokens(model, tokens), null, model);
});

test.run();
