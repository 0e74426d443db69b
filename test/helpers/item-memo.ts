// One item memo as the stores keep it, for the tests of either store (test/store.test.ts,
// test/database-store.test.ts).

import type { ItemMemo } from '../../lib/state/store.ts';

export const sampleMemo: ItemMemo = {
  sha256: 'ab',
  size: 3,
  mtimeNs: '1',
  ino: '2',
  sourceDocumentId: 'd',
  mediaType: 'text/markdown',
  opId: 'o',
  rows: { content_chunks: ['k1', 'k2'] },
};
