// Directories a walk could not list (lib/corpus/files.ts: onUnlisted): permission denied, an
// I/O error, gone between listing its parent and opening it, a stale network mount. What they
// hold is unknown, not gone, so every known item under one counts as seen: the cleanup pass
// keeps its rows and memo, and its document stays live for any copy of it elsewhere that did
// vanish. The operator hears of each folder as the warning `unlisted_directory` (summary, run
// record, /walk-status); the first walk that lists it again removes what is really gone from it
// and takes in what is new.

import type { UnlistedDirectory } from '../../lib/corpus/files.ts';
import type { RunWarning } from '../../lib/runs/record.ts';
import { relPathOf } from '../../lib/state/keys.ts';
import type { StateStore } from '../../lib/state/store.ts';
import type { LiveItems } from './live-items.ts';
import { MAX_NAMED_PATHS } from './tally.ts';

export class UnlistedDirectories {
  /** Corpus-relative path ('' for the corpus root) to why it could not be listed. */
  readonly #reasons = new Map<string, string>();

  add({ relPath, reason }: UnlistedDirectory): void {
    if (!this.#reasons.has(relPath)) this.#reasons.set(relPath, reason);
  }

  get size(): number {
    return this.#reasons.size;
  }

  /**
   * Marks every known file under an unlisted directory as seen and its document as live; says,
   * per directory, how many of them this walk had not seen at all. One pass over the known items.
   */
  async keepKnownItems(store: StateStore, live: LiveItems): Promise<Map<string, number>> {
    const kept = new Map([...this.#reasons.keys()].map((dir) => [dir, 0]));
    if (kept.size === 0) return kept;
    for await (const identity of store.itemIdentities()) {
      const relPath = relPathOf(identity);
      const dir = relPath === null ? null : this.#holder(relPath);
      if (dir === null) continue;
      if (!live.seen.has(identity)) kept.set(dir, kept.get(dir)! + 1);
      live.seen.add(identity);
      const { stamp } = await store.getItemStamp(identity);
      if (stamp !== undefined) live.liveDocumentIds.add(stamp.sourceDocumentId);
    }
    return kept;
  }

  /** One `unlisted_directory` warning per directory, the first MAX_NAMED_PATHS of them by name. */
  warnings(kept: ReadonlyMap<string, number>): RunWarning[] {
    const dirs = [...this.#reasons].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const named: RunWarning[] = dirs.slice(0, MAX_NAMED_PATHS).map(([dir, reason]) => ({
      name: 'unlisted_directory',
      message:
        `${dir === '' ? 'the corpus root' : dir}: ${reason}; ${files(kept.get(dir) ?? 0)} known under it ` +
        'keep their rows; the first walk that can list it again removes what is gone from it and takes in what is new',
    }));
    const rest = dirs.slice(MAX_NAMED_PATHS);
    if (rest.length === 0) return named;
    const keptInRest = rest.reduce((n, [dir]) => n + (kept.get(dir) ?? 0), 0);
    return [
      ...named,
      {
        name: 'unlisted_directory',
        message:
          `${rest.length} more directories could not be listed (the log names each); ` +
          `${files(keptInRest)} known under them keep their rows`,
      },
    ];
  }

  /** The deepest unlisted directory that holds relPath, or null. */
  #holder(relPath: string): string | null {
    for (let end = relPath.lastIndexOf('/'); end > 0; end = relPath.lastIndexOf('/', end - 1)) {
      const dir = relPath.slice(0, end);
      if (this.#reasons.has(dir)) return dir;
    }
    return this.#reasons.has('') ? '' : null;
  }
}

const files = (n: number): string => (n === 1 ? '1 file' : `${n} files`);
