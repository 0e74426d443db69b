// A corpus bucket that is a directory (file:///dir): a mounted volume or a shared disk.

import { copyFile, mkdir, rename, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { walkFiles, type UnlistedDirectory } from '../corpus/files.ts';
import type { Logger } from '../log.ts';
import { BucketError, type BucketObject, type CorpusBucket } from './bucket.ts';

const versionOf = (size: number, mtimeNs: bigint) => `${size}:${mtimeNs}`;

export function fileBucket(url: URL, log: Logger): CorpusBucket {
  const root = fileURLToPath(url);
  const at = (key: string) => path.join(root, ...key.split('/'));
  return {
    location: url.href,
    async *list(): AsyncGenerator<BucketObject> {
      // Hidden entries are skipped here as in the walk: they are never corpus documents.
      const unlisted: UnlistedDirectory[] = [];
      for await (const file of walkFiles(root, log, { onUnlisted: (directory) => unlisted.push(directory) }))
        yield { key: file.relPath, version: versionOf(file.size, file.mtimeNs), size: file.size };
      // A listing with a hole in it would read as deletions: pull-sync would delete the corpus
      // copies of what it could not see, and the walk their rows.
      if (unlisted.length > 0) {
        const [first] = unlisted;
        throw new BucketError(
          `cannot list ${first!.relPath || 'the root'} of ${url.href} (${first!.reason})` +
            (unlisted.length > 1 ? ` nor ${unlisted.length - 1} more folders` : '') +
            '; nothing is synced from a partial listing',
        );
      }
    },
    async download(key, to) {
      await copyFile(at(key), to);
    },
    async upload(key, from) {
      const target = at(key);
      await mkdir(path.dirname(target), { recursive: true });
      const temp = path.join(path.dirname(target), `.upload-${randomBytes(8).toString('hex')}.tmp`);
      try {
        await copyFile(from, temp);
        await rename(temp, target);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
      const stats = await stat(target, { bigint: true });
      return versionOf(Number(stats.size), stats.mtimeNs);
    },
    async remove(key) {
      await rm(at(key), { force: true });
    },
    close() {},
  };
}
