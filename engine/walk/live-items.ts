// What one walk saw and what stays live: the input of the cleanup pass (stages/cleanup.ts) and
// of the URL backlink reconciliation (stages/backlink.ts). Items and documents are kept as
// 64-bit digests (digest-set.ts says what a false "present" costs).

import { DigestSet } from './digest-set.ts';

export class LiveItems {
  /** Identity keys of every item the walk enumerated, whatever became of it. */
  readonly seen = new DigestSet();
  /** Document ids that some item of this walk resolves to. */
  readonly liveDocumentIds = new DigestSet();
  /** Reference items whose rows landed in this walk. */
  readonly landedReferenceIds = new Set<string>();
}
