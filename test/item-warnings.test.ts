// @engine
// Warnings about one document reach the walk's summary, its text and its pipeline_runs record
// beside the document's path, on the engine the run targets: text files in other encodings land
// as written, those read in a guessed encoding say so, and a scanned PDF says it has no text layer.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { walk } from '../engine/walk/walk.ts';
import { formatSummary } from '../cli/walk.ts';
import type { RunWarning } from '../lib/runs/record.ts';
import { encodeSingleByte, makeScannedPdf } from './helpers/documents.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

let f: WalkFixture;
test.before(async () => {
  // OCR off: the scan's warning is no_text_layer (test/ocr-walk.test.ts walks scans with OCR on).
  f = await walkFixture({ env: { INGEST_OCR: 'off' } });
});
test.after(async () => {
  await f.dispose();
});

const CAFE = '# Café crème\n\nLe café ouvre à sept heures; la crème brûlée est préparée chaque matin.\n';
const QUOTES = 'The supplier said “delivered on time” and charged 5 € per crate.\n';
const utf16be = (text: string) => Buffer.from(text, 'utf16le').swap16();

async function chunkText(relPath: string): Promise<string> {
  const { rows } = await f.target.db.query<{ text: string }>(
    `SELECT c.text FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id
      WHERE d.rel_path = $1 ORDER BY c.idx`,
    [relPath],
  );
  return rows.map((r) => r.text).join('\n');
}

test('text in other encodings lands as written; a guessed encoding and a scan are warnings beside their path', async () => {
  await f.write('latin1.md', Buffer.from(CAFE, 'latin1'));
  await f.write('notes/quotes.txt', encodeSingleByte(QUOTES, 'windows-1252'));
  await f.write('utf16le.md', Buffer.from(`\ufeff${CAFE.replace('Café', 'Thé')}`, 'utf16le'));
  await f.write('utf16be.txt', utf16be(`\ufeff${QUOTES}`));
  await f.write('utf8-bom.md', Buffer.from(`\ufeff${CAFE.replace('Café', 'Chocolat')}`));
  await f.write('scans/contract.pdf', await makeScannedPdf(2));
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.equal([summary.items.changed, summary.items.failed], [6, 0]);

  const { rows: titles } = await f.target.db.query<{ rel_path: string; title: string | null }>(
    `SELECT rel_path, title FROM source_documents WHERE media_type = 'text/markdown' ORDER BY rel_path`,
  );
  assert.equal(titles, [
    { rel_path: 'latin1.md', title: 'Café crème' },
    { rel_path: 'utf16le.md', title: 'Thé crème' },
    { rel_path: 'utf8-bom.md', title: 'Chocolat crème' },
  ]);
  assert.match(await chunkText('latin1.md'), /la crème brûlée est préparée/);
  assert.match(await chunkText('utf16le.md'), /^# Thé crème/);
  assert.match(await chunkText('notes/quotes.txt'), /“delivered on time” and charged 5 €/);
  assert.match(await chunkText('utf16be.txt'), /“delivered on time” and charged 5 €/);
  const { rows: mangled } = await f.target.db.query(`SELECT id FROM content_chunks WHERE strpos(text, chr(65533)) > 0`);
  assert.equal(mangled, []);
  // The scan landed as a document with nothing in it: the warning is all that tells.
  assert.is(await chunkText('scans/contract.pdf'), '');

  const itemWarnings = (warnings: readonly RunWarning[]) =>
    warnings.filter((w) => w.path !== undefined).sort((a, b) => (a.path! < b.path! ? -1 : 1));
  const expected = [
    { name: 'encoding_fallback', path: 'latin1.md', message: /^not UTF-8: read as windows-1252/ },
    { name: 'encoding_fallback', path: 'notes/quotes.txt', message: /^not UTF-8: read as windows-1252/ },
    { name: 'no_text_layer', path: 'scans/contract.pdf', message: /^none of its 2 pages holds text/ },
  ];
  const check = (warnings: readonly RunWarning[]) => {
    const found = itemWarnings(warnings);
    assert.equal(
      found.map((w) => [w.name, w.path]),
      expected.map((w) => [w.name, w.path]),
    );
    found.forEach((w, i) => assert.match(w.message, expected[i]!.message));
  };
  check(summary.warnings);
  const { rows: runs } = await f.target.db.query<{ result: { warnings?: RunWarning[] } }>(
    'SELECT result FROM pipeline_runs WHERE op_id = $1',
    [summary.opId],
  );
  check(runs[0]!.result.warnings ?? []);
  const text = formatSummary(summary, 'test');
  assert.match(text, /^warning encoding_fallback latin1\.md: not UTF-8: read as windows-1252/m);
  assert.match(text, /^warning no_text_layer scans\/contract\.pdf: none of its 2 pages holds text \(a scan\?\)/m);

  // A warning belongs to the walk that read the document: an unchanged one is not read again.
  const again = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(again.items.unchanged, 6);
  assert.equal(itemWarnings(again.warnings), []);
});

test.run();
