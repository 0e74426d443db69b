// What the extraction model's tokens cost, per model, at the standard rate and through the
// vendor's Message Batches API (half of both rates), for the prefill's dry run and summary
// (engine/prefill/). One dated table: a price change is one edit here, and a model missing from it
// is reported as unpriced rather than guessed.

/** The day the table was read off the vendor's price list. */
export const PRICES_AS_OF = '2026-11-01';

/** The share of the standard rate a batch request costs, input and output alike. */
export const BATCH_DISCOUNT = 0.5;

interface ModelPrice {
  /** US dollars per million input tokens at the standard rate. */
  input: number;
  /** US dollars per million output tokens at the standard rate. */
  output: number;
}

/**
 * Model families to their standard rates. A name is priced when it is a family, or a family and
 * a date (claude-sonnet-4-5-20250929); any other (a later version, a gateway's alias, the mock's)
 * is unpriced rather than guessed from a neighbour.
 */
const PRICES: ReadonlyMap<string, ModelPrice> = new Map([
  ['claude-opus-4-5', { input: 5, output: 25 }],
  ['claude-opus-4-1', { input: 15, output: 75 }],
  ['claude-opus-4', { input: 15, output: 75 }],
  ['claude-sonnet-4-5', { input: 3, output: 15 }],
  ['claude-sonnet-4', { input: 3, output: 15 }],
  ['claude-3-7-sonnet', { input: 3, output: 15 }],
  ['claude-haiku-4-5', { input: 1, output: 5 }],
  ['claude-3-5-haiku', { input: 0.8, output: 4 }],
]);

export interface Price {
  /** US dollars at the standard rate. */
  standard: number;
  /** US dollars through the batch API. */
  batch: number;
}

const DATED = /^(.+)-\d{8}$/;

function priceOf(model: string): ModelPrice | undefined {
  return PRICES.get(model) ?? PRICES.get(DATED.exec(model)?.[1] ?? '');
}

/** What `tokens` cost under `model`; null for a model the table does not price (the mock's, a gateway's alias). */
export function priceTokens(model: string, tokens: { input: number; output: number }): Price | null {
  const price = priceOf(model);
  if (price === undefined) return null;
  const standard = (tokens.input * price.input + tokens.output * price.output) / 1_000_000;
  return { standard, batch: standard * BATCH_DISCOUNT };
}
