// DOCX and XLSX are zip files, and a few kilobytes of zip can inflate to gigabytes. Before a
// parser sees one, every entry is inflated once here as a stream, counting bytes, and the
// file is refused as soon as the entry count or the inflated total passes its limit. Declared
// sizes are checked too, but not trusted: yauzl's validateEntrySizes fails an entry that
// inflates to more than it declared.

import yauzl from 'yauzl';
import { ConversionError } from './errors.ts';

export interface ZipLimits {
  maxEntries: number;
  maxInflatedBytes: number;
}

/** Checks the container; resolves with its entry names in directory order. */
export async function checkZip(bytes: Uint8Array, limits: ZipLimits): Promise<string[]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(
      Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      { lazyEntries: true, validateEntrySizes: true },
      (error, file) =>
        error
          ? reject(new ConversionError('corrupt', `not a readable zip container: ${error.message}`))
          : resolve(file),
    ),
  );
  try {
    if (zip.entryCount > limits.maxEntries) {
      throw new ConversionError(
        'too_many_entries',
        `the zip holds ${zip.entryCount} entries, over the limit of ${limits.maxEntries}`,
      );
    }
    let inflated = 0;
    const names: string[] = [];
    for await (const entry of entries(zip)) {
      names.push(entry.fileName);
      if (inflated + entry.uncompressedSize > limits.maxInflatedBytes) {
        throw new ConversionError('zip_bomb', `entries declare more than ${limits.maxInflatedBytes} inflated bytes`);
      }
      if (entry.fileName.endsWith('/')) continue;
      inflated = await drain(zip, entry, inflated, limits.maxInflatedBytes);
    }
    return names;
  } finally {
    zip.close();
  }
}

async function* entries(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  while (true) {
    const next = await new Promise<yauzl.Entry | null>((resolve, reject) => {
      const onEntry = (entry: yauzl.Entry) => {
        cleanup();
        resolve(entry);
      };
      const onEnd = () => {
        cleanup();
        resolve(null);
      };
      const onError = (error: Error) => {
        cleanup();
        reject(new ConversionError('corrupt', `broken zip directory: ${error.message}`));
      };
      const cleanup = () => {
        zip.off('entry', onEntry);
        zip.off('end', onEnd);
        zip.off('error', onError);
      };
      zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
      zip.readEntry();
    });
    if (next === null) return;
    yield next;
  }
}

async function drain(zip: yauzl.ZipFile, entry: yauzl.Entry, already: number, max: number): Promise<number> {
  const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) =>
    zip.openReadStream(entry, (error, s) =>
      error
        ? reject(new ConversionError('corrupt', `unreadable zip entry ${entry.fileName}: ${error.message}`))
        : resolve(s),
    ),
  );
  let total = already;
  try {
    for await (const chunk of stream) {
      total += (chunk as Buffer).length;
      if (total > max) throw new ConversionError('zip_bomb', `entries inflate past ${max} bytes`);
    }
  } catch (error) {
    (stream as unknown as { destroy?: () => void }).destroy?.();
    if (error instanceof ConversionError) throw error;
    // An entry inflating past the size it declared is the classic lying bomb.
    if (/too many bytes/.test((error as Error).message))
      throw new ConversionError('zip_bomb', `zip entry ${entry.fileName} inflates past its declared size`);
    throw new ConversionError(
      'corrupt',
      `zip entry ${entry.fileName} does not inflate cleanly: ${(error as Error).message}`,
    );
  }
  return total;
}
