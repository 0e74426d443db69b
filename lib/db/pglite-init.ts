// Creates an embedded database's data directory, in a process of its own, then exits.
//
// PGlite's first open runs initdb inside the WebAssembly heap, which then never shrinks: a
// process that creates its database holds about 250 MB more for the rest of its life than one
// that opens an existing directory. Run here, that peak ends with this process.
//
//   node lib/db/pglite-init.ts DATA_DIR

import { createPglite } from './pglite-wasm.ts';

const dataDir = process.argv[2];
if (dataDir === undefined) {
  process.stderr.write('usage: pglite-init.ts DATA_DIR\n');
  process.exit(2);
}
const pg = await createPglite(dataDir);
await pg.close();
