// @engine
// The bid-worker's jobs end to end on the engine the run targets, with the real converters, the
// mock model server on loopback and a corpus walked into rows first: a form of each type
// analysed into its questions at their places; template_fill answering from the corpus with
// record:// citations, "no evidence" where the corpus has none, and filled DOCX and XLSX copies
// that open and hold each answer where it belongs; bad payloads and poison forms failing their
// job alone with a named error.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import { pino } from 'pino';
import ExcelJS from 'exceljs';
import { Document, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import { walk } from '../engine/walk/walk.ts';
import { loadConfig } from '../lib/config.ts';
import { createConverter } from '../stages/convert/index.ts';
import { jobHandlers } from '../worker/jobs.ts';
import { startWorker, type RunningWorker } from '../worker/loop.ts';
import { JOB_SCHEMAS, type AnalyseFormResult, type TemplateFillResult } from '../worker/payloads.ts';
import { enqueueJob, getJob, type QueueRow } from '../worker/queue.ts';
import { openWorkerRuntime, type WorkerRuntime } from '../worker/runtime.ts';
import { docxBomb, flateBombPdf, makePdf } from './helpers/documents.ts';
import { makeImagePdf } from '../bench/corpus/scans.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

const log = pino({ level: 'silent' });

const FAQ = `# Company FAQ

Q: Which quality certification does Northwind Traders hold?
A: Northwind Traders is certified to ISO 9001 since 2015.

Q: How many employees does Northwind Traders have?
A: Northwind Traders employs 420 people across three sites.

Q: Who is the data protection officer?
A: Grace Hopper is the data protection officer.
`;

let tier: MockTier;
let f: WalkFixture;
let runtime: WorkerRuntime;
let worker: RunningWorker;

test.before(async () => {
  tier = await startMockTier();
  f = await walkFixture();
  await f.write('faq.md', FAQ);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  const config = loadConfig(
    {
      INGEST_DATA_DIR: f.root,
      ENGINE_SOURCE_PATH: f.corpus,
      INGEST_WORKER_INLINE_MAX_BYTES: String(20 * 1024 * 1024),
      INGEST_CONVERT_MEMORY_MB: '300',
      INGEST_CONVERT_TIMEOUT_MS: '20000',
    },
    f.root,
  );
  runtime = await openWorkerRuntime(config, log);
  worker = startWorker(
    f.target.db,
    jobHandlers(runtime.deps),
    { concurrency: 2, leaseMs: 30_000, pollMs: 20, graceMs: 1_000, retryBaseMs: 10, retryMaxMs: 50 },
    log,
  );
});

test.after(async () => {
  await worker.stop();
  await runtime.close();
  await f.dispose();
  await tier.stop();
});

async function run(job: 'analyse_form' | 'template_fill', payload: unknown): Promise<QueueRow> {
  const id = randomUUID();
  await enqueueJob(f.target.db, { id, job, payload, maxAttempts: 2 });
  const end = Date.now() + 60_000;
  for (;;) {
    const row = (await getJob(f.target.db, id))!;
    if (row.status === 'done' || row.status === 'failed') return row;
    if (Date.now() > end) throw new Error(`job ${id} still ${row.status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const inline = (filename: string, bytes: Uint8Array | string) => ({
  form: { inline: { filename, base64: Buffer.from(bytes).toString('base64') } },
});

async function docxForm(): Promise<Buffer> {
  const cell = (text: string) => new TableCell({ children: [new Paragraph(text)] });
  return Packer.toBuffer(
    new Document({
      sections: [
        {
          children: [
            new Paragraph('Section 1: Company'),
            new Paragraph('Which quality certification does your company hold?'),
            new Paragraph('Please keep answers short.'),
            new Table({
              rows: [
                new TableRow({ children: [cell('Question'), cell('Answer')] }),
                new TableRow({ children: [cell('How many employees does your company have?'), cell('')] }),
                new TableRow({ children: [cell('What colour is the CEO’s favourite car? (optional)'), cell('')] }),
              ],
            }),
          ],
        },
      ],
    }),
  );
}

async function xlsxForm(): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  const sheet = workbook.addWorksheet('Questionnaire');
  sheet.addRow(['Section 2: Governance']);
  sheet.addRow(['Who is your data protection officer?', '']);
  sheet.addRow(['Which quality certification does your company hold?', '']);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

const byText = (result: AnalyseFormResult, pattern: RegExp) => result.questions.find((q) => pattern.test(q.text));

test('analyse_form: a DOCX form gives its paragraph and table-cell questions, with answer cells', async () => {
  const bytes = await docxForm();
  const row = await run('analyse_form', inline('tender.docx', bytes));
  assert.is(row.status, 'done', row.error ?? '');
  const result = row.result as AnalyseFormResult;
  assert.is(result.questions.length, 3);
  const cert = byText(result, /quality certification/)!;
  assert.equal(cert.location, { kind: 'docx_paragraph', paragraph: 1 });
  assert.is(cert.section, 'Section 1: Company');
  const staff = byText(result, /employees/)!;
  assert.equal(staff.location, {
    kind: 'docx_table_cell',
    table: 0,
    row: 1,
    cell: 0,
    answer_cell: { table: 0, row: 1, cell: 1 },
  });
  assert.is(staff.answer_kind, 'number');
  const optional = byText(result, /colour/)!;
  assert.is(optional.required, false);
  // Stable ids: the same bytes analysed again give the same ids.
  const again = (await run('analyse_form', inline('tender.docx', bytes))).result as AnalyseFormResult;
  assert.equal(
    again.questions.map((q) => q.id),
    result.questions.map((q) => q.id),
  );
});

test('analyse_form: an XLSX form gives sheet-and-cell questions with the answer cell beside each', async () => {
  const row = await run('analyse_form', inline('tender.xlsx', await xlsxForm()));
  assert.is(row.status, 'done', row.error ?? '');
  const result = row.result as AnalyseFormResult;
  assert.is(result.questions.length, 2);
  assert.equal(byText(result, /data protection/)!.location, {
    kind: 'xlsx_cell',
    sheet: 'Questionnaire',
    cell: 'A2',
    answer_cell: 'B2',
  });
  assert.is(byText(result, /data protection/)!.section, 'Section 2: Governance');
});

test('analyse_form: PDF, HTML, markdown and a corpus path give their questions by line', async () => {
  const pdf = await makePdf([
    { heading: 'Supplier questionnaire', paragraphs: ['Who is your data protection officer?'] },
  ]);
  const html = '<html><body><h1>Tender</h1><p>How many employees does your company have?</p></body></html>';
  const md = '# Tender\n\nDescribe your quality management.\n\nIs your company certified? (optional)\n';
  await f.write('forms/tender.md', md);
  for (const [payload, expected] of [
    [inline('tender.pdf', pdf), [/data protection officer/]],
    [inline('tender.html', html), [/employees/]],
    [inline('tender.md', md), [/quality management/, /certified/]],
    [{ form: { path: 'forms/tender.md' } }, [/quality management/, /certified/]],
  ] as const) {
    const row = await run('analyse_form', payload);
    assert.is(row.status, 'done', row.error ?? '');
    const result = row.result as AnalyseFormResult;
    assert.is(result.questions.length, expected.length, JSON.stringify(result.questions));
    expected.forEach((pattern, i) => assert.match(result.questions[i]!.text, pattern));
    assert.ok(result.questions.every((q) => q.location.kind === 'text_line'));
  }
  const md1 = (await run('analyse_form', inline('tender.md', md))).result as AnalyseFormResult;
  assert.equal(md1.questions[0]!.location, { kind: 'text_line', line: 3 });
  assert.is(md1.questions[0]!.answer_kind, 'long_text');
});

test('template_fill: a filled DOCX holds each answer in its answer cell or after its question', async () => {
  const analysed = await run('analyse_form', inline('tender.docx', await docxForm()));
  const row = await run('template_fill', { analysis_job: analysed.id });
  assert.is(row.status, 'done', row.error ?? '');
  const result = row.result as TemplateFillResult;
  const cert = result.answers.find((a) => /quality certification/.test(a.question))!;
  assert.match(cert.answer!, /ISO 9001/);
  assert.is(cert.no_evidence, false);
  assert.ok(cert.confidence > 0);
  const [doc] = (await f.target.db.query<{ id: string }>(`SELECT id FROM source_documents WHERE rel_path = 'faq.md'`))
    .rows;
  assert.equal(cert.citations, [`record://source_document/${doc!.id}`]);
  assert.ok(cert.evidence.length > 0 && cert.evidence.length <= 5);
  const colour = result.answers.find((a) => /colour/.test(a.question))!;
  assert.is(colour.no_evidence, true, JSON.stringify(colour.evidence));
  assert.is(colour.answer, null);
  assert.equal(colour.citations, []);
  // The filled copy opens (our own DOCX reader, run in the isolated converter) and holds the answers.
  assert.ok(result.output.filled !== null && result.output.filled.endsWith('tender.filled.docx'));
  const filled = await readFile(result.output.filled!);
  const converter = createConverter();
  try {
    const blocks = new Map(
      (
        await converter.blocks(filled, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document')
      ).blocks.map((b) => [b.address, b.text]),
    );
    assert.match(blocks.get('p2')!, /ISO 9001/, 'the answer follows its question paragraph');
    assert.match(blocks.get('p3')!, /keep answers short/, 'the rest of the document follows unchanged');
    assert.match(blocks.get('t0.r1.c1')!, /420 people/, 'the answer is in the answer cell');
    assert.match(blocks.get('t0.r2.c1')!, /No evidence found/);
    const text = (
      await converter.convert(filled, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document')
    ).text;
    assert.match(text, /ISO 9001/);
  } finally {
    await converter.close();
  }
  const written = JSON.parse(await readFile(result.output.result, 'utf8'));
  assert.equal(written.answers, result.answers);
});

test("every job kind's result, in the queue and in every file written, validates against its printed schema", async () => {
  // The schemas as `ingest jobs schema` prints them, checked by a validator of their own.
  const ajv = new Ajv({ allErrors: true, strict: false });
  const check = (name: string, value: unknown) => {
    const valid = ajv.compile(JSON.parse(JSON.stringify(JOB_SCHEMAS[name])) as object);
    assert.ok(valid(value), `${name}: ${ajv.errorsText(valid.errors)}`);
  };
  const analysed = await run('analyse_form', inline('tender.docx', await docxForm()));
  assert.is(analysed.status, 'done', analysed.error ?? '');
  check('analyse_form.result', analysed.result);
  for (const payload of [{ analysis_job: analysed.id }, inline('tender.xlsx', await xlsxForm())]) {
    const filled = await run('template_fill', payload);
    assert.is(filled.status, 'done', filled.error ?? '');
    check('template_fill.result', filled.result);
    const file = JSON.parse(await readFile((filled.result as TemplateFillResult).output.result, 'utf8')) as unknown;
    check('template_fill.result', file);
    assert.equal(file, filled.result, 'the file holds what the queue holds');
  }
});

test('template_fill: a filled XLSX holds each answer in the cell beside its question', async () => {
  const row = await run('template_fill', inline('tender.xlsx', await xlsxForm()));
  assert.is(row.status, 'done', row.error ?? '');
  const result = row.result as TemplateFillResult;
  assert.is(result.analysis_job, null);
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.readFile(result.output.filled!);
  const sheet = workbook.getWorksheet('Questionnaire')!;
  assert.match(String(sheet.getCell('B2').value), /Grace Hopper/);
  assert.match(String(sheet.getCell('B3').value), /ISO 9001/);
  assert.is(String(sheet.getCell('A2').value), 'Who is your data protection officer?');
});

test('a bad payload fails its job alone with bad_payload, at its first attempt', async () => {
  for (const payload of [
    {},
    { form: { path: '../etc/passwd.md' } },
    { form: { inline: { filename: 'x.md', base64: '***' } } },
    { form: { path: 'a.md' }, extra: true },
  ]) {
    const row = await run('analyse_form', payload);
    assert.is(row.status, 'failed');
    assert.is(row.attempts, 1);
    assert.match(row.error!, /^bad_payload: /);
  }
  const fill = await run('template_fill', { analysis_job: 'not-a-uuid' });
  assert.match(fill.error!, /^bad_payload: /);
  const missing = await run('template_fill', { analysis_job: randomUUID() });
  assert.match(missing.error!, /^form_not_analysed: /);
  const unsupported = await run('analyse_form', inline('tender.exe', 'MZ'));
  assert.match(unsupported.error!, /^form_unsupported: /);
  const absent = await run('analyse_form', { form: { path: 'forms/none.md' } });
  assert.match(absent.error!, /^form_not_found: /);
  // And the worker goes on: a good job after them is done.
  assert.is((await run('analyse_form', inline('ok.md', 'Who are you?\n'))).status, 'done');
});

test('poison forms (a zip bomb DOCX, a Flate-bomb PDF) fail their job alone with a named error', async () => {
  const bomb = await run('analyse_form', inline('bomb.docx', await docxBomb(600 * 1024 * 1024)));
  assert.is(bomb.status, 'failed');
  assert.is(bomb.attempts, 1);
  assert.match(bomb.error!, /^form_unreadable\/zip_bomb: /);
  const pdf = await run('analyse_form', inline('bomb.pdf', await flateBombPdf(600 * 1024 * 1024)));
  assert.is(pdf.status, 'failed');
  assert.match(pdf.error!, /^form_unreadable\//);
  assert.is((await run('analyse_form', inline('ok.md', 'Who are you?\n'))).status, 'done');
});

// Walked last: the questionnaire then sits in the corpus beside the FAQ, as a form often does.
test('template_fill: a form in the corpus, or a copy of it, is never its own evidence', async () => {
  const questionnaire =
    '# Supplier questionnaire\n\nWhat is the airspeed of an unladen swallow?\n\nWho is the data protection officer?\n';
  await f.write('forms/questionnaire.md', questionnaire);
  await f.write('archive/questionnaire-copy.md', questionnaire);
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  const answered = async (payload: unknown) => {
    const row = await run('template_fill', payload);
    assert.is(row.status, 'done', row.error ?? '');
    const { answers } = row.result as TemplateFillResult;
    return {
      swallow: answers.find((a) => /swallow/.test(a.question))!,
      officer: answers.find((a) => /data protection/.test(a.question))!,
    };
  };
  const [faq] = (await f.target.db.query<{ id: string }>(`SELECT id FROM source_documents WHERE rel_path = 'faq.md'`))
    .rows;
  // By its path, and inline (its bytes alone name it): the form's words answer nothing, the FAQ still does.
  for (const payload of [{ form: { path: 'forms/questionnaire.md' } }, inline('questionnaire.md', questionnaire)]) {
    const { swallow, officer } = await answered(payload);
    assert.is(swallow.no_evidence, true, JSON.stringify(swallow.evidence));
    assert.is(swallow.answer, null);
    assert.equal(swallow.evidence, []);
    assert.match(officer.answer!, /Grace Hopper/);
    assert.equal(officer.citations, [`record://source_document/${faq!.id}`]);
  }
  // Edited since the walk: its bytes are new, but the document at its path is still the form.
  await f.write('forms/questionnaire.md', `${questionnaire}\nPlease answer in English.\n`);
  await f.write('archive/questionnaire-copy.md', 'Nothing here now.\n');
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  await f.write('forms/questionnaire.md', `${questionnaire}\nPlease answer in English or French.\n`);
  const { swallow } = await answered({ form: { path: 'forms/questionnaire.md' } });
  assert.is(swallow.no_evidence, true, JSON.stringify(swallow.evidence));
});

test('a scanned form: its questions read by OCR, its answers cited from a scanned document, no filled copy, said plainly', async () => {
  await f.write(
    'scans/audits.pdf',
    await makeImagePdf([
      { lines: ['Q: Who signs the supplier audits?', 'A: Ada Lovelace signs the supplier audits.'] },
    ]),
  );
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  const form = await makeImagePdf([{ lines: ['Supplier questionnaire', 'Who signs the supplier audits?'] }]);
  const analysed = await run('analyse_form', inline('scanned-form.pdf', form));
  assert.is(analysed.status, 'done', analysed.error ?? '');
  const analysis = analysed.result as AnalyseFormResult;
  assert.equal(
    analysis.questions.map((q) => q.text),
    ['Who signs the supplier audits?'],
  );
  assert.match(analysis.scanned!.ocr, /^1 page read by OCR \(page 1\), mean confidence \d+$/);
  assert.match(analysis.scanned!.filled_copy, /^none: a scanned form is read by OCR/);
  const filled = await run('template_fill', { analysis_job: analysed.id });
  assert.is(filled.status, 'done', filled.error ?? '');
  const result = filled.result as TemplateFillResult;
  assert.is(result.output.filled, null);
  assert.equal(result.scanned, analysis.scanned);
  const [answer] = result.answers;
  assert.match(answer!.answer!, /Ada Lovelace/);
  assert.ok(
    answer!.evidence.some((e) => e.source === 'scans/audits.pdf'),
    JSON.stringify(answer!.evidence),
  );
  const ajv = new Ajv({ allErrors: true, strict: false });
  assert.ok(ajv.validate(JSON.parse(JSON.stringify(JOB_SCHEMAS['analyse_form.result'])) as object, analysis));
  assert.ok(ajv.validate(JSON.parse(JSON.stringify(JOB_SCHEMAS['template_fill.result'])) as object, result));
});

test.run();
