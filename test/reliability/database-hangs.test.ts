// @engine
// A database that hangs rather than stops (docs/OPERATIONS.md "When the database goes away"):
// a server that accepts connections and never answers, and one that stops answering in the
// middle of a walk. Nothing waits for ever: the connection's wait and each statement's are
// bounded (INGEST_DB_CONNECT_TIMEOUT_S, INGEST_DB_QUERY_TIMEOUT_S), the walk fails with a named
// error, and the next walk lands exactly the rows of an uninterrupted one. PostgreSQL hangs
// behind a frozen loopback proxy; the embedded database's process is stopped (SIGSTOP).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { pino } from 'pino';
import { openLifespan, type Lifespan } from '../../engine/lifespan.ts';
import { walk, type WalkSummary } from '../../engine/walk/walk.ts';
import { loadConfig } from '../../lib/config.ts';
import { rowsInContentTerms, WALKED_TABLES } from '../helpers/content.ts';
import { runIngest } from '../helpers/cli.ts';
import { corpusAndTier } from '../helpers/corpus-and-tier.ts';
import { stoppableDatabase } from '../helpers/stoppable-database.ts';
import { uninterruptedRows } from '../helpers/walk.ts';

const DOCS = 150;
const log = pino({ level: 'silent' });
/** Far past the bounds the tests set (2 s): reached only if something waits for ever. */
const HANG_MS = 120_000;

const files = corpusAndTier(test, 'database-hangs', DOCS, { mix: 'md:100', seed: 11 });

/** `work`, or a failure naming `what` once HANG_MS passed. */
async function unlessHung<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still waits after ${HANG_MS / 1000} s`)), HANG_MS);
  });
  try {
    return await Promise.race([work, hung]);
  } finally {
    clearTimeout(timer);
  }
}

test('a server that accepts connections and never answers: ingest walk fails within the connect wait, named', async () => {
  const silent = net.createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = silent.address() as AddressInfo;
    const result = await unlessHung(
      'ingest walk',
      runIngest(['walk', files.corpus], {
        INGEST_DATA_DIR: path.join(files.root, 'silent'),
        ENGINE_DB_DSN: `postgresql://ingest:secret-word@127.0.0.1:${port}/ingest`,
        INGEST_DB_CONNECT_TIMEOUT_S: '2',
      }),
    );
    assert.is(result.status, 1, result.stderr);
    assert.match(
      result.stderr,
      /ingest: cannot connect to PostgreSQL at postgresql:\/\/ingest:\[REDACTED\]@127\.0\.0\.1:\d+/,
    );
    assert.match(result.stderr, /no connection within INGEST_DB_CONNECT_TIMEOUT_S/);
    assert.not.match(result.stderr, /secret-word/, 'the password stays out of the message');
  } finally {
    silent.close();
  }
});

test('a database that stops answering mid-walk fails the walk within the statement wait; the next walk lands every row', async () => {
  const expected = await uninterruptedRows(files.corpus);

  const dataDir = path.join(files.root, 'hung');
  const database = await stoppableDatabase(dataDir, files.root);
  const config = loadConfig(
    {
      INGEST_DATA_DIR: dataDir,
      INGEST_DB_QUERY_TIMEOUT_S: '2',
      INGEST_DB_CONNECT_TIMEOUT_S: '2',
      ...database.env,
    },
    files.root,
  );
  let lifespan: Lifespan = await openLifespan(config, log);
  try {
    let hung = null as Promise<void> | null;
    const interrupted: WalkSummary = await unlessHung(
      'the walk',
      walk(lifespan, {
        sourcePath: files.corpus,
        onProgress: ({ done }) => {
          if (done === DOCS / 3) hung = database.hang();
        },
      }),
    );
    await hung;
    // PostgreSQL serves again once the proxy is cut and resumed; the embedded database's
    // stopped process was ended by the walk that waited on it.
    await database.stop().catch(() => {});
    await database.restart();
    assert.is(interrupted.status, 'failed');
    assert.match(interrupted.error ?? '', /the database could not be reached during the walk/);
    assert.is(interrupted.items.failed, 0, 'no item is blamed for the database');
    await unlessHung('closing', lifespan.close());

    lifespan = await openLifespan(config, log);
    const resumed = await walk(lifespan, { sourcePath: files.corpus });
    assert.is(resumed.status, 'completed', resumed.error);
    const got = await rowsInContentTerms(lifespan.db);
    for (const table of WALKED_TABLES) assert.equal(got[table], expected[table], table);
  } finally {
    await lifespan.close();
    await database.dispose();
  }
});

test.run();
