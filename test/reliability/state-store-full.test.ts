// The state store on a disk that refuses to grow, for real (docs/OPERATIONS.md "When the disk is
// full"): a child writes to it as a walk does under a file-size limit (bash's `ulimit -f`, with
// SIGXFSZ ignored so that the kernel answers EFBIG rather than ending the child), so that lmdb's
// native commit fails as it does on a full disk, and lmdb rejects every promise of the failed
// commit, one it made for itself too. The child ends in the named error instead of an unheard
// rejection; with the limit gone, everything it committed is there and the store writes again.
// test/reliability/disk-full.test.ts injects the same failure under a whole walk.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspectStateStore, openStateStore } from '../../lib/state/store.ts';
import { itemIdentity, memoKeys } from '../helpers/fill-state-store.ts';
import { sampleMemo } from '../helpers/item-memo.ts';

const FILL = path.resolve(import.meta.dirname, '..', 'helpers', 'fill-state-store.ts');
/** The largest file the child may write, in KB: a few hundred rounds of the child's writes. */
const FILE_LIMIT_KB = 2_048;

function fillUnderLimit(dir: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'bash',
      ['-c', `trap '' XFSZ; ulimit -f ${FILE_LIMIT_KB}; exec "$@"`, 'bash', process.execPath, FILL, dir],
      { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

test('a state store that cannot grow fails its writes by name, and keeps every commit for when it can', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-state-store-full-'));
  try {
    const filled = await fillUnderLimit(dir);
    assert.is(filled.status, 0, `the child ended by itself:\n${filled.stderr}`);
    const { rounds, code } = JSON.parse(filled.stdout) as { rounds: number; code?: string };
    // lmdb reports the short write as EIO, as it does on a full tmpfs.
    assert.is(code, 'state_store_write_failed', `the writes failed by name after ${rounds} rounds`);
    assert.ok(rounds > 0, 'some rounds committed before the limit');

    const store = await openStateStore(dir);
    try {
      for (let round = 0; round < rounds; round += 1) {
        for (const key of memoKeys(round)) assert.ok((await store.getMemo(key)) !== undefined, key);
        assert.ok((await store.getItem(itemIdentity(round))).memo !== undefined, itemIdentity(round));
      }
      await store.putItem('after', { ...sampleMemo, sourceDocumentId: 'doc-after' });
      await store.putMemo('after', 'written');
      assert.is(await store.getMemo('after'), 'written');
    } finally {
      await store.close();
    }
    assert.is((await inspectStateStore(dir)).invalidItems, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
