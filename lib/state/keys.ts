// The keys of item memos in the state store: one per source item, by the item's identity (a
// corpus-relative path or a URL as the ledger spells it), and the retired keys under which a
// replaced memo waits for the cleanup pass.

const FILE = 'file:';

export const fileIdentity = (relPath: string): string => `${FILE}${relPath}`;

/** The corpus-relative path of a file's identity, or null for any other item. */
export const relPathOf = (identity: string): string | null =>
  identity.startsWith(FILE) ? identity.slice(FILE.length) : null;

const URL_PREFIX = 'url:';

export const urlIdentity = (url: string): string => `${URL_PREFIX}${url}`;
export const isUrlIdentity = (identity: string): boolean => identity.startsWith(URL_PREFIX);

/** Where an item's replaced memo waits for the cleanup pass: never an identity a walk enumerates. */
export const retiredIdentity = (identity: string, opId: string): string => `retired:${opId}:${identity}`;
export const isRetiredIdentity = (key: string): boolean => key.startsWith('retired:');
/** The identity a retired key was made from (op ids are uuids: no colon inside). */
export const unretired = (key: string): string => key.split(':').slice(2).join(':');
