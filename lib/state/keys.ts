// The keys of item memos in the state store: one per source item, by the item's identity (a
// corpus-relative path or a URL as the ledger spells it), and the retired keys under which a
// replaced memo waits for the cleanup pass.

export const fileIdentity = (relPath: string): string => `file:${relPath}`;

export const urlIdentity = (url: string): string => `url:${url}`;

/** Where an item's replaced memo waits for the cleanup pass: never an identity a walk enumerates. */
export const retiredIdentity = (identity: string, opId: string): string => `retired:${opId}:${identity}`;
export const isRetiredIdentity = (key: string): boolean => key.startsWith('retired:');
