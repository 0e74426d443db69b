// Writes to a state store as a walk does (memos and item memos at once, in the same turns) until a
// write fails, then closes it and prints how many rounds committed and the error's code. Run as
// a child under a file-size limit (test/reliability/state-store-full.test.ts), so that lmdb's
// native commit is what fails.
//
//   node test/helpers/fill-state-store.ts STORE_DIR

import { openStateStore } from '../../lib/state/store.ts';
import { sampleMemo } from './item-memo.ts';

/** More rounds than any limit the test sets lets commit: reaching them means the limit did not hold. */
const MOST_ROUNDS = 5_000;
/** A memo's value: an extractor output's order of size. */
const VALUE = 'v'.repeat(3_000);

export const memoKeys = (round: number): string[] => [`memo-${round}-a`, `memo-${round}-b`];
export const itemIdentity = (round: number): string => `item-${round}`;

if (import.meta.main) {
  const store = await openStateStore(process.argv[2]!);
  let rounds = 0;
  let code: string | undefined;
  try {
    for (; rounds < MOST_ROUNDS; rounds += 1)
      await Promise.all([
        ...memoKeys(rounds).map((key) => store.putMemo(key, VALUE)),
        store.putItem(itemIdentity(rounds), { ...sampleMemo, sourceDocumentId: `doc-${rounds}` }),
      ]);
  } catch (error) {
    code = (error as { code?: string }).code;
  }
  await store.close();
  process.stdout.write(JSON.stringify({ rounds, code }));
}
