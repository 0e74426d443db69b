// The checksums `ingest db migrate` recorded in schema_migrations before it took them over the
// SQL alone: a sha256 of each migration file's whole text, comments included. A database migrated
// before then still holds them. Its next migrate accepts such a checksum when the migration's SQL
// is still the SQL released with it (the `sql` checksum, over lib/db/sql-without-comments.ts's
// text), and leaves the row as it is; a changed SQL is refused as any edit is.
//
// Every migration that existed then has its entry, computed from the files as released (commit
// 459d48e; schema/0001 and 0002 have had their comments edited since; the others were byte for byte the files
// here when this table was written). So the table is frozen: a later comment edit of any of these
// files needs no entry, and a migration added since never had a whole-file checksum recorded.

export interface ReleasedChecksum {
  /** sha256 of the whole file as released: what schema_migrations holds on such a database. */
  readonly file: string;
  /** sha256 of that file's SQL without comments: what the migration's checksum must still be. */
  readonly sql: string;
}

// One line a migration, by version.
// prettier-ignore
export const RELEASED_FILE_CHECKSUMS: ReadonlyMap<number, ReleasedChecksum> = new Map([
  [1, { file: '064b2373c1ba5e41a971d7ab64abe3d3e432479a21306f0f2afdcc0986467fad', sql: '2c9f534b2b319a9a8bc7fd649ec1c33c9152680fa046d8c3af5cae828a372315' }],
  [2, { file: '0cd78ccb00a61c02ff515434516539161821684035db1d54a32f44a27adb1ba7', sql: 'a088e94458ae8dd1c1f94f264e58cfef40960167a4c19c2a53a90d193a33e338' }],
  [3, { file: '3834aadf99c5a22a29eab94f147b63c99136604e525a41743736a16f976371cb', sql: 'f802bb32ebb42d349029b148c45ef84f47d3eafaac2a94c19e29a39227d7d3fa' }],
  [4, { file: '45472bf769f24ef747ef16fb1b7ce6eea05c4221ed1afb31d2a61a225c1c3a12', sql: '6f3cf0c33e761644335ebf704c5090bbc0b1bc68a8c2ca3669927d0ea5bb5bad' }],
  [5, { file: 'b4ec244c380846dfbdd8abe809c87429d2f9593548ebc5ec324a56bf62cbd681', sql: 'be96490392a5e58fcbe5a33377123d8b3b39a5978da91950ce68e822cde2c85e' }],
  [6, { file: '19bda189e97005800165ff1940e0ace92ea90ad0b4d707b2c08f590bebe87df0', sql: '7ef69e95117a0064ed91fde153c2956b272252f840efc6772737ca685c9a781d' }],
  [7, { file: '5ed76d53c4141a71f6aa2b4c678524dbaee5f4a0f5bb4e72fee5b76818ff75bb', sql: 'af5597164aae9160383e10243f282ae58571e63e9bb5a8cec024a05d71b78507' }],
  [8, { file: 'efcf54cc748c8cc077164c44b9dc75cbb4d27cf5a6b7d1cf7930b56545724cf3', sql: '85f3e867feb834c68478a20941a08587fe4892d7756349562e0054f27339736d' }],
  [9, { file: 'b20071d41c450806a838519ac287526fa0a03887493cedc62c42e04385b4a42e', sql: '47f141dd97689cae6ceefb5e9213ab96693fa731f370e939d1c2624ee77ff3ff' }],
  [10, { file: 'd35a832e3d2d76304c95f3b71f6798cf0589998aa0b8141e87f857a296e4ecee', sql: 'c8e228ee5e2395909d74c5643a0661751ce2d6860a029aca526a76d64c24bad3' }],
  [11, { file: '20cc587e722ff37bcb9615444bda3eed1732255e1cf732495c62bf9991dff785', sql: '4cd3d62bd58c6086cde438f84469c53984478e06c86f223572121041a1ae0139' }],
  [12, { file: '4c99afaa76eb9978190616117d85ab59728ba429c25376733b0314d7ba295c18', sql: '0e3c79184f4126d99e2d7226841ad0c55cedd55019635d0de6a5dfcddbf4def5' }],
  [13, { file: '47beea09dddcc2220f06eb0d3fcf02a74fef42a361db10a678bc36dfd9ba057e', sql: '264532d7be87fabd9251df0ebe8bb21b415b0b3debb194603003e850db885e34' }],
  [14, { file: '3dbdbddf572a087c582164dccb7c1a94ab65bab52dccd3bb2800f53343263901', sql: 'dd55fd603f49b6b0aca2ada18fa2d6597ddd82dc4fd1297bad30da62c822b7f1' }],
  [15, { file: '027dbae94709838f996358f8fdedb387c5a3586bf6b38cc15bf9e7c5b82a85f1', sql: 'd227beb08533c4feae4cec4f6bb6b5466e8b5af2f5fdd3acc19e203dab893e16' }],
  [16, { file: '40954209652a9bd8edbbac70dcac5b3a057bc37b1a140cb774e4c94ac9f47390', sql: 'da6a139ce6e19aae3b0024192e072cd30de6011b3bd726e334b55a73c99412d0' }],
]);

/** Whether `recorded` is the whole-file checksum a release recorded for this migration, its SQL unchanged since. */
export function isReleasedFileChecksum(migration: { version: number; checksum: string }, recorded: string): boolean {
  const released = RELEASED_FILE_CHECKSUMS.get(migration.version);
  return released !== undefined && recorded === released.file && migration.checksum === released.sql;
}
