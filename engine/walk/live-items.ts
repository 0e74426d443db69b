// What one walk saw and what stays live: the input of the cleanup pass (stages/cleanup.ts) and
// of the URL backlink reconciliation (stages/backlink.ts). Items and documents are kept as
// 64-bit digests (digest-set.ts says what a false "present" costs).

import type { ItemOutcome } from '../item/outcome.ts';
import { DigestSet } from './digest-set.ts';

export class LiveItems {
  /** Identity keys of every item the walk enumerated, whatever became of it. */
  readonly seen = new DigestSet();
  /** Document ids that some item of this walk resolves to. */
  readonly liveDocumentIds = new DigestSet();
  /** Reference items whose rows landed in this walk. */
  readonly landedReferenceIds = new Set<string>();

  /** What a settled item keeps: its document, or its reference item's rows. */
  record({ liveDocumentId, landedReferenceId }: ItemOutcome): void {
    if (liveDocumentId !== undefined) this.liveDocumentIds.add(liveDocumentId);
    if (landedReferenceId !== undefined) this.landedReferenceIds.add(landedReferenceId);
  }
}
