// Stage 5 (i) names: normalisation, trigram similarity, the MinHash bands that block on it, cosine.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { adornments, bandKeys, cosine, jaccard, normaliseName, trigrams, unitLength } from '../stages/resolve/names.ts';
import { mockEmbedding } from '../mock/embeddings.ts';

test('spellings of one firm meet on one normalised key; different firms do not', () => {
  const acme = ['Acme Trading Company', 'ACME Trading Co.', 'Acme  Trading Co Ltd', 'acme trading', 'Ａｃｍｅ Trading'];
  assert.equal([...new Set(acme.map(normaliseName))], ['acme trading']);
  assert.is(normaliseName('Société Générale S.A.'), 'societe generale');
  assert.is(normaliseName('Marks & Spencer plc'), 'marks and spencer');
  assert.is.not(normaliseName('Acme Bank'), normaliseName('Acme Trading'));
  // A legal form is only cut from the end, and never leaves the name empty.
  assert.is(normaliseName('Company'), 'company');
  assert.is(normaliseName('Co Operative Group'), 'co operative group');
});

test('titles before a name are cut like legal forms after it, never the whole name', () => {
  assert.equal(
    [...new Set(['Dr Jane Smith', 'Jane Smith', 'Dr. Jane Smith', 'Prof Jane Smith'].map(normaliseName))],
    ['jane smith'],
  );
  assert.is(normaliseName('Mrs Edith Clarke Ltd'), 'edith clarke');
  assert.is(normaliseName('Dr'), 'dr');
  assert.is(normaliseName('Sir'), 'sir');
  assert.equal(['Jane Smith', 'Dr Jane Smith', 'Northwind Traders Ltd', 'Dr'].map(adornments), [0, 1, 1, 0]);
});

test('a one-letter typo keeps most trigrams; another name shares few', () => {
  const base = trigrams(normaliseName('Northwind Traders'));
  assert.ok(jaccard(base, trigrams(normaliseName('Nortwind Traders'))) >= 0.65);
  assert.ok(jaccard(base, trigrams(normaliseName('Northwind Tradres'))) >= 0.6);
  assert.ok(jaccard(base, trigrams(normaliseName('Contoso Logistics'))) < 0.1);
  assert.is(jaccard(base, base), 1);
});

test('band keys: stable, shared by near spellings, rarely by unrelated names', () => {
  const keys = (name: string) => bandKeys(trigrams(normaliseName(name)));
  assert.equal(keys('Northwind Traders'), keys('NORTHWIND TRADERS Ltd'), 'the same normalised name, the same keys');
  assert.is(keys('Ada Lovelace').length, 16);
  const shares = (a: string, b: string) => keys(a).some((k) => keys(b).includes(k));
  const typos = ['Nortwind Traders', 'Northwnd Traders', 'Northwind Tarders', 'Northwind Trader', 'Nrothwind Traders'];
  assert.ok(
    typos.every((t) => shares('Northwind Traders', t)),
    'every one-letter variant shares a band',
  );
  const unrelated = ['Contoso Logistics', 'Fabrikam Bank', 'Grace Hopper', 'Alan Turing', 'Wingtip University'];
  assert.ok(unrelated.filter((u) => shares('Northwind Traders', u)).length <= 1);
  // nearness compares keys band by band: a key never equals another band's.
  const inTheirBands = (a: string, b: string) => keys(a).some((k, band) => k === keys(b)[band]);
  for (const a of ['Northwind Traders', ...typos, ...unrelated])
    for (const b of [...typos, ...unrelated]) assert.is(inTheirBands(a, b), shares(a, b), `${a} / ${b}`);
});

test('cosine: 1 for one direction, 0 for orthogonal or empty vectors; near spellings embed near', () => {
  const of = (a: ArrayLike<number>, b: ArrayLike<number>) => cosine(unitLength(a), unitLength(b));
  assert.is(of([1, 2, 3], [2, 4, 6]).toFixed(6), '1.000000');
  assert.is(of([1, 0], [0, 1]), 0);
  assert.is(of([0, 0], [1, 1]), 0);
  assert.is(of([3, 4], [4, 3]).toFixed(6), '0.960000');
  const near = of(mockEmbedding('Northwind Traders', 1024), mockEmbedding('Nortwind Traders', 1024));
  const far = of(mockEmbedding('Northwind Traders', 1024), mockEmbedding('Grace Hopper', 1024));
  assert.ok(near > 0.6 && far < 0.2, `near ${near}, far ${far}`);
});

test.run();
