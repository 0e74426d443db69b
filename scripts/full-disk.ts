// A real full disk under a walk (docs/OPERATIONS.md "When the disk is full"): the data directory
// (embedded database and state store) on a tmpfs too small for the corpus, a walk that fills it,
// then the tmpfs grown and one more walk, whose rows must equal those of a walk on a roomy disk.
// Needs root (it mounts); CI injects the fault instead (test/reliability/disk-full.test.ts).
//
//   node scripts/full-disk.ts [--docs N] [--mb M]

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { rowsInContentTerms } from '../test/helpers/content.ts';
import { BIN, generateCorpus } from '../test/helpers/corpus.ts';

const { values } = parseArgs({
  options: { docs: { type: 'string', default: '400' }, mb: { type: 'string', default: '80' } },
});
const root = mkdtempSync(path.join(tmpdir(), 'ingest-full-disk-'));
const corpus = path.join(root, 'corpus');
const small = path.join(root, 'small');
mkdirSync(small);

function run(command: string, args: string[]): { status: number | null; out: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}
function walk(dataDir: string) {
  const result = spawnSync(process.execPath, [BIN, 'walk', corpus], {
    encoding: 'utf8',
    // The embedded database may stop answering when its write-ahead log cannot grow: the statement
    // wait ends it (embedded_database_gone), here sooner than the default's 600 s.
    env: { ...process.env, INGEST_DATA_DIR: dataDir, INGEST_LOG_LEVEL: 'error', INGEST_DB_QUERY_TIMEOUT_S: '60' },
    maxBuffer: 256 * 1024 * 1024,
  });
  return { status: result.status, out: result.stdout, err: result.stderr };
}
async function rows(dataDir: string) {
  const db = await openDatabase(loadConfig({ INGEST_DATA_DIR: dataDir }, root));
  try {
    return await rowsInContentTerms(db);
  } finally {
    await db.close();
  }
}

try {
  generateCorpus(corpus, Number(values.docs), { mix: 'md:90,html:5,docx:5', seed: 1 });
  const mounted = run('mount', ['-t', 'tmpfs', '-o', `size=${values.mb}m`, 'tmpfs', small]);
  if (mounted.status !== 0) throw new Error(`cannot mount a tmpfs here (root needed): ${mounted.out.trim()}`);
  const full = walk(path.join(small, 'data'));
  process.stdout.write(`on ${values.mb} MB: exit ${full.status}\n${full.out}`);
  if (
    full.status !== 1 ||
    !/error: (a disk is full|the state store could not commit|the database could not be reached)/.test(full.out)
  )
    throw new Error('the walk on a full disk did not stop with a named error');
  run('mount', ['-o', 'remount,size=2g', small]);
  const next = walk(path.join(small, 'data'));
  process.stdout.write(`space back: exit ${next.status}\n${next.out}`);
  const roomy = walk(path.join(root, 'roomy'));
  if (next.status !== 0 || roomy.status !== 0) throw new Error(`a walk with room failed:\n${next.err}${roomy.err}`);
  const [got, expected] = [await rows(path.join(small, 'data')), await rows(path.join(root, 'roomy'))];
  const differ = Object.keys(expected).filter((t) => JSON.stringify(got[t]) !== JSON.stringify(expected[t]));
  if (differ.length > 0) throw new Error(`rows differ from a walk on a roomy disk: ${differ.join(', ')}`);
  process.stdout.write('every table equals the walk on a roomy disk\n');
} finally {
  run('umount', [small]);
  rmSync(root, { recursive: true, force: true });
}
