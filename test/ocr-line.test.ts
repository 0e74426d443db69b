// @engine
// Scans beside the other items (docs/DECISIONS.md "Scanned documents read", "Scans beside the
// other items"), on the engine the run targets: with one OCR child, scans listed ahead of notes
// do not hold the walk's slots while they wait for it. Two of them take the OCR line (one read,
// one waiting); the others are put back and read later in the walk, and the notes listed after
// them land first. Every item lands once, its OCR counted once.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { walk } from '../engine/walk/walk.ts';
import { makeImagePdf } from '../bench/corpus/scans.ts';
import { walkFixture } from './helpers/walk.ts';

test('scans waiting for a busy OCR child give their slots up: the notes listed after them land first', async () => {
  const f = await walkFixture({ env: { INGEST_OCR_WORKERS: '1', INGEST_WALK_IN_FLIGHT: '4' } });
  try {
    // The corpus's own files are listed before its folders: the four scans, then the four notes.
    for (const n of [1, 2, 3, 4]) {
      await f.write(`scan-${n}.pdf`, await makeImagePdf([{ lines: [`Scanned delivery note number ${n} of four.`] }]));
      await f.write(`notes/note-${n}.md`, `# Note ${n}\n\nThe typed note number ${n} needs no OCR.\n`);
    }
    const finished: string[] = [];
    const summary = await walk(f.lifespan, {
      sourcePath: f.corpus,
      onProgress: (progress) => {
        if (progress.finished !== undefined) finished.push(progress.finished);
      },
    });
    assert.is(summary.status, 'completed');
    assert.equal([summary.items.seen, summary.items.changed, summary.items.failed], [8, 8, 0]);
    assert.is(summary.ocr.pages, 4);
    assert.equal(finished.slice().sort(), [
      'notes/note-1.md',
      'notes/note-2.md',
      'notes/note-3.md',
      'notes/note-4.md',
      'scan-1.pdf',
      'scan-2.pdf',
      'scan-3.pdf',
      'scan-4.pdf',
    ]);
    // Every note before any scan: the first scan's child was still loading its models.
    assert.equal(
      finished.slice(0, 4).every((path) => path.startsWith('notes/')),
      true,
      finished.join(', '),
    );
    const { rows } = await f.target.db.query<{ rel_path: string }>(
      `SELECT d.rel_path FROM source_documents d JOIN content_chunks c ON c.source_document_id = d.id
        WHERE c.text LIKE '%Scanned delivery note number%' ORDER BY 1`,
    );
    assert.equal(
      rows.map((r) => r.rel_path),
      ['scan-1.pdf', 'scan-2.pdf', 'scan-3.pdf', 'scan-4.pdf'],
    );
  } finally {
    await f.dispose();
  }
});

test.run();
