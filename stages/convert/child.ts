// The converter child process: receives one job at a time over IPC, converts, answers. It
// holds the parsers that a hostile file can hang or blow up; the parent watches its time and
// memory and kills it when either runs out (pool.ts).

import { answerJobs } from './answer-jobs.ts';
import { ConversionError } from './errors.ts';
import { convertDocx } from './docx.ts';
import { convertPdf } from './pdf.ts';
import { convertXlsx } from './xlsx.ts';
import { docxBlocks, xlsxBlocks } from './layout.ts';
import type { ChildJob } from './pool.ts';
import type { Converted, FormBlock } from './types.ts';

async function convert(job: ChildJob): Promise<Converted | FormBlock[]> {
  if (job.want === 'blocks') return blocks(job);
  switch (job.mediaType) {
    case 'application/pdf':
      return convertPdf(job.bytes, job.limits.maxPages);
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
      return convertDocx(job.bytes, job.limits);
    case 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet':
      return convertXlsx(job.bytes, job.limits);
    default:
      throw new ConversionError('corrupt', `no isolated converter for ${job.mediaType}`);
  }
}

async function blocks(job: ChildJob): Promise<FormBlock[]> {
  switch (job.mediaType) {
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
      return docxBlocks(job.bytes, job.limits);
    case 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet':
      return xlsxBlocks(job.bytes, job.limits);
    default:
      throw new ConversionError('corrupt', `no isolated block reader for ${job.mediaType}`);
  }
}

answerJobs<ChildJob, Converted | FormBlock[]>(convert);
