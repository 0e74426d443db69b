// The OCR child process (pool: stages/convert/pool.ts, started by index.ts): renders the pages it
// is asked for and reads them, one job at a time, saying `step` after each page so that the
// parent's per-page timer restarts; the parent also watches the job's whole time and the child's
// memory, and kills it past either.

import { PDFParse } from 'pdf-parse';
import { answerJobs } from '../convert/answer-jobs.ts';
import { OcrEngine } from './engine.ts';
import { imagePages } from './images.ts';
import type { OcrJob, OcrPage, PdfJob } from './index.ts';

let engine: { language: string; engine: OcrEngine } | null = null;

function engineFor(language: string): OcrEngine {
  if (engine?.language !== language) engine = { language, engine: new OcrEngine(language) };
  return engine.engine;
}

/** A job's pages read in order; the parent hears of each (its page timer). */
async function readPages(job: OcrJob & { id: number }): Promise<OcrPage[]> {
  const ocr = engineFor(job.language);
  const read: OcrPage[] = [];
  // A page's time runs from the end of the one before: drawing or decoding it is OCR's work too.
  let since = Date.now();
  const readOne = async (page: number, image: Buffer, dpi: number) => {
    read.push({ page, ...(await ocr.read(image, dpi)), ms: Date.now() - since });
    since = Date.now();
    process.send!({ id: job.id, step: true });
  };
  if (job.kind === 'image') {
    const pages = imagePages(job.bytes, job.mediaType, job.maxPixels);
    for (const [i, decode] of pages.entries()) await readOne(i + 1, await decode(), job.dpi);
    return read;
  }
  const parser = new PDFParse({ data: job.bytes });
  try {
    for (const page of job.pages) {
      const { scale, dpi } = await renderScale(parser, page, job);
      const shot = await parser.getScreenshot({ partial: [page], scale, imageBuffer: true, imageDataUrl: false });
      await readOne(page, Buffer.from(shot.pages[0]!.data), dpi);
    }
  } finally {
    await parser.destroy().catch(() => {});
  }
  return read;
}

/**
 * The page drawn at the job's resolution, or smaller when that would pass the pixel limit: the
 * size is the page's declared one, known before anything is drawn.
 */
async function renderScale(parser: PDFParse, page: number, job: PdfJob): Promise<{ scale: number; dpi: number }> {
  const info = await parser.getInfo({ parsePageInfo: true, partial: [page] });
  const { width, height } = info.pages[0]!;
  const wanted = job.dpi / 72;
  const scale = Math.min(wanted, Math.sqrt(job.maxPixels / Math.max(1, width * height)));
  return { scale, dpi: Math.round(scale * 72) };
}

answerJobs(readPages);
