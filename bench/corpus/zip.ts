// Rewrites a zip container (DOCX, XLSX) without entry timestamps, so that the same document
// always gives the same bytes. The OOXML libraries stamp the current time into each entry,
// which is the only thing that would make the generated corpus differ between runs. The
// writer is zip-writer.ts (it leaves the date fields zero).

import { crc32, deflateRawSync } from 'node:zlib';
import yauzl from 'yauzl';
import { zip } from './zip-writer.ts';

async function readEntries(bytes: Buffer): Promise<{ name: string; data: Buffer }[]> {
  const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  const out: { name: string; data: Buffer }[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', () => resolve());
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (error, stream) => {
        if (error) return reject(error);
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('error', reject);
        stream.on('end', () => {
          out.push({ name: entry.fileName, data: Buffer.concat(chunks) });
          zip.readEntry();
        });
      });
    });
    zip.readEntry();
  });
  return out;
}

/** The same entries in the same order, deflated, with no timestamps at all. */
export async function normaliseZip(bytes: Buffer): Promise<Buffer> {
  const entries = await readEntries(bytes);
  return zip(
    entries.map(({ name, data }) => ({
      name,
      data: deflateRawSync(data, { level: 6 }),
      crc: crc32(data),
      size: data.length,
    })),
  );
}
