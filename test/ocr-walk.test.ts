// @engine
// Scanned PDFs walked with OCR on, on the engine the run targets: a scan's words reach chunks,
// Q&A pairs (through the mock model), mentions and search; a mixed PDF's pages land in page
// order; the summary counts the pages OCRed; a byte-identical copy is not read again; an
// unchanged scan costs no OCR on the next walk.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import { walk } from '../engine/walk/walk.ts';
import { searchEvidence } from '../cli/search.ts';
import { loadConfig } from '../lib/config.ts';
import { openWorkerRuntime } from '../worker/runtime.ts';
import { formatSummary } from '../cli/walk.ts';
import { fileIdentity } from '../lib/state/keys.ts';
import { makeImagePdf, makeTiff, pageImage, pngDeclaring } from '../bench/corpus/scans.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

let f: WalkFixture;
test.before(async () => {
  f = await walkFixture({ env: { INGEST_OCR_WORKERS: '1' } });
});
test.after(async () => {
  await f.dispose();
});

const CONTRACT = ['Acme Logistics signed with Northwind Traders.', 'Q: When is payment due?', 'A: Within thirty days.'];

/** The two copies of the contract are one document, under the path of whichever landed first. */
const CONTRACT_PATHS = ['scans/contract.pdf', 'copies/contract.pdf'];

async function documentText(...relPaths: string[]): Promise<string> {
  const { rows } = await f.target.db.query<{ text: string }>(
    `SELECT c.text FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id
      WHERE d.rel_path = ANY($1) ORDER BY c.idx`,
    [relPaths],
  );
  return rows.map((r) => r.text).join('\n');
}

test('a scan’s words reach chunks, Q&A pairs and mentions; a copy is not read twice; an unchanged scan is not read again', async () => {
  const contract = await makeImagePdf([{ lines: CONTRACT }]);
  await f.write('scans/contract.pdf', contract);
  await f.write('copies/contract.pdf', contract);
  await f.write(
    'mixed.pdf',
    await makeImagePdf([
      { text: 'Part one is typed: the warehouse opens at seven.' },
      { lines: ['Part two is scanned: the gate closes at nine.'] },
    ]),
  );
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.equal([summary.items.changed, summary.items.failed], [3, 0]);
  // The contract's one page and the mixed PDF's second: the copy's reading was the contract's.
  assert.is(summary.ocr.pages, 2);
  assert.match(formatSummary(summary, 'test'), /^ocr: 2 pages read in \d+\.\d s$/m);
  const ocrWarnings = summary.warnings.filter((w) => w.name === 'ocr').map((w) => w.path);
  assert.equal(ocrWarnings.sort(), ['copies/contract.pdf', 'mixed.pdf', 'scans/contract.pdf']);

  const text = await documentText(...CONTRACT_PATHS);
  assert.match(text, /Acme Logistics signed with Northwind Traders/);
  assert.match(
    (await documentText('mixed.pdf')).replace(/\s+/g, ' '),
    /Part one is typed: the warehouse opens at seven\. Part two is scanned: the gate closes at nine\./,
  );
  const { rows: qa } = await f.target.db.query<{ question_text: string; answer_text: string }>(
    `SELECT q.question_text, q.answer_text FROM q_a_extractions q JOIN source_documents d ON d.id = q.source_document_id
      WHERE d.rel_path = ANY($1)`,
    [CONTRACT_PATHS],
  );
  assert.equal(qa, [{ question_text: 'When is payment due?', answer_text: 'Within thirty days.' }]);
  const { rows: mentions } = await f.target.db.query<{ canonical_name: string }>(
    `SELECT DISTINCT m.canonical_name FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id
      WHERE d.rel_path = ANY($1) ORDER BY 1`,
    [CONTRACT_PATHS],
  );
  assert.ok(mentions.some((m) => m.canonical_name === 'Acme Logistics'));
  assert.ok(mentions.some((m) => m.canonical_name === 'Northwind Traders'));
  // Search, as template_fill and `ingest search` retrieve evidence, finds the scan's words.
  const runtime = await openWorkerRuntime(loadConfig({ INGEST_DATA_DIR: f.root }, f.root), pino({ level: 'silent' }));
  try {
    const evidence = await searchEvidence(f.target.db, runtime.deps, 'Acme Logistics payment due', 5);
    assert.ok(
      evidence.some((e) => CONTRACT_PATHS.some((p) => e.source.endsWith(p)) && /Acme Logistics/.test(e.text)),
      JSON.stringify(evidence.map((e) => [e.source, e.text])),
    );
  } finally {
    await runtime.close();
  }

  const again = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(again.items.unchanged, 3);
  assert.is(again.ocr.pages, 0);
  assert.equal(
    again.warnings.filter((w) => w.path !== undefined),
    [],
  );
});

test('--read-scans reads the scans walked with OCR off or before OCR, and nothing else', async () => {
  await f.reopen(undefined, { INGEST_OCR: 'off' });
  await f.write('old/unread.pdf', await makeImagePdf([{ lines: ['Harbour Freight invoices are paid monthly.'] }]));
  await f.write('old/before-ocr.pdf', await makeImagePdf([{ lines: ['Kestrel Mining renewed the lease.'] }]));
  await f.write('old/typed.pdf', await makeImagePdf([{ text: 'A typed page needs no OCR at all, ever.' }]));
  const off = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([off.items.changed, off.items.unchanged, off.ocr.pages], [3, 3, 0]);
  assert.equal(
    off.warnings
      .filter((w) => w.name === 'no_text_layer')
      .map((w) => w.path)
      .sort(),
    ['old/before-ocr.pdf', 'old/unread.pdf'],
  );
  // A memo written before OCR was built has no count of unread pages.
  const key = fileIdentity('old/before-ocr.pdf');
  const { memo } = await f.lifespan.store.getItem(key);
  const { unreadPages, ...before } = memo!;
  assert.is(unreadPages, 1);
  await f.lifespan.store.putItem(key, before);

  await f.reopen(undefined, { INGEST_OCR: 'on' });
  const plain = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([plain.items.unchanged, plain.ocr.pages], [6, 0]);

  const reading = await walk(f.lifespan, { sourcePath: f.corpus, readScans: true });
  assert.equal([reading.items.changed, reading.items.unchanged, reading.ocr.pages], [2, 4, 2]);
  assert.match(await documentText('old/unread.pdf'), /Harbour Freight invoices are paid monthly/);
  assert.match(await documentText('old/before-ocr.pdf'), /Kestrel Mining renewed the lease/);
  const after = await walk(f.lifespan, { sourcePath: f.corpus, readScans: true });
  assert.equal([after.items.unchanged, after.ocr.pages], [6, 0]);
});

test('page images are dropped unless asked; asked, they are documents, and a corrupt one and a bomb fail alone', async () => {
  await f.write('images/receipt.png', pageImage(['Receipt from Granite Bakery for two loaves.']));
  await f.write(
    'images/fax.tiff',
    makeTiff([['Fax page one from Orion Shipping.'], ['Fax page two confirms the berth.']]),
  );
  await f.write('images/blank.png', pageImage([]));
  await f.write('images/corrupt.png', Buffer.concat([pngDeclaring(200, 100).subarray(0, 33), Buffer.from('not zlib')]));
  await f.write('images/bomb.png', pngDeclaring(100_000, 100_000));
  const off = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([off.items.dropped, off.items.changed, off.ocr.pages], [5, 0, 0]);

  await f.reopen(undefined, { INGEST_IMAGE_DOCUMENTS: 'true' });
  const on = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(on.status, 'completed');
  assert.equal([on.items.dropped, on.items.changed, on.items.failed, on.ocr.pages], [0, 3, 2, 4]);
  assert.equal(on.failures.map((x) => [x.path, x.stage, x.code]).sort(), [
    ['images/bomb.png', 'convert', 'too_many_pixels'],
    ['images/corrupt.png', 'convert', 'corrupt'],
  ]);
  assert.match(await documentText('images/receipt.png'), /Receipt from Granite Bakery for two loaves/);
  assert.match(
    (await documentText('images/fax.tiff')).replace(/\s+/g, ' '),
    /Fax page one from Orion Shipping\. Fax page two confirms the berth\./,
  );
  const { rows } = await f.target.db.query<{ media_type: string }>(
    `SELECT media_type FROM source_documents WHERE rel_path = 'images/blank.png'`,
  );
  assert.equal(rows, [{ media_type: 'image/png' }]);
  const blank = on.warnings.find((w) => w.path === 'images/blank.png');
  assert.match(blank?.message ?? '', /no words found on 1$/);
});

test('an OCR child killed mid-scan fails that scan alone; the walk goes on', async () => {
  await f.reopen(undefined, { INGEST_IMAGE_DOCUMENTS: 'false', INGEST_OCR_MEMORY_MB: '128' });
  await f.write('killed/scan.pdf', await makeImagePdf([{ lines: ['This scan costs more memory than allowed.'] }]));
  await f.write('killed/note.md', '# Note\n\nThe note beside the scan lands all the same.\n');
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.equal(
    summary.failures.map((x) => [x.path, x.stage, x.code]),
    [['killed/scan.pdf', 'convert', 'memory_limit']],
  );
  assert.match(summary.failures[0]!.message, /the OCR engine passed 128 MB of memory/);
  assert.match(await documentText('killed/note.md'), /lands all the same/);
});

test.run();
