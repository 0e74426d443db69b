// What pull-sync last materialised: for each key, the bucket version it fetched and the local
// file it wrote (size and mtime). A key whose bucket version and local file both still match
// is not fetched again. Kept as one JSON file in the engine state directory, replaced
// atomically; losing it costs one re-download of the corpus, never a wrong file.

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

interface Entry {
  version: string;
  size: number;
  mtimeNs: string;
}

const FILE = 'corpus-sync.json';

export class SyncManifest {
  readonly #file: string;
  readonly #entries: Map<string, Entry>;

  private constructor(file: string, entries: Map<string, Entry>) {
    this.#file = file;
    this.#entries = entries;
  }

  static async load(stateDir: string): Promise<SyncManifest> {
    const file = path.join(stateDir, FILE);
    const parsed = await readFile(file, 'utf8').then(
      (text) => JSON.parse(text) as Record<string, Entry>,
      () => ({}),
    );
    return new SyncManifest(file, new Map(Object.entries(parsed)));
  }

  /** True when `localFile` is still exactly what was fetched for this key at this version. */
  async current(key: string, version: string, localFile: string): Promise<boolean> {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.version !== version) return false;
    const stats = await stat(localFile, { bigint: true }).catch(() => null);
    return stats !== null && Number(stats.size) === entry.size && String(stats.mtimeNs) === entry.mtimeNs;
  }

  async record(key: string, version: string, localFile: string): Promise<void> {
    const stats = await stat(localFile, { bigint: true });
    this.#entries.set(key, { version, size: Number(stats.size), mtimeNs: String(stats.mtimeNs) });
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }

  async save(): Promise<void> {
    const temp = `${this.#file}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      // The state directory is the LMDB store's; with the state store in the database
      // (INGEST_STATE_STORE=database) nothing else has made it.
      await mkdir(path.dirname(this.#file), { recursive: true });
      await writeFile(temp, JSON.stringify(Object.fromEntries(this.#entries)));
      await rename(temp, this.#file);
    } finally {
      await rm(temp, { force: true });
    }
  }
}
