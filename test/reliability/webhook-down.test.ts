// @engine
// Reliability (ii): the web app's run-record receiver down for a whole walk. The walk completes
// and lands its rows; each record costs the webhook's bounded attempts; the terminal record is
// kept in the state store and delivered by the next walk once the receiver is back. The real
// walk, webhook client and a loopback receiver.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { walk } from '../../engine/walk/walk.ts';
import { DEFAULT_WEBHOOK_RETRY } from '../../lib/runs/webhook.ts';
import { markdown, walkFixture } from '../helpers/walk.ts';

interface Delivery {
  op_id: string;
  status: string;
}

/** A receiver that answers `status()` to every run record, keeping what it was sent. */
async function receiver(status: () => number): Promise<{ url: string; got: Delivery[]; server: Server }> {
  const got: Delivery[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push(JSON.parse(body) as Delivery);
      res.writeHead(status()).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, got, server };
}

test('a walk with the receiver down completes; its record is retried within bound, then delivered by the next walk', async () => {
  let up = false;
  const app = await receiver(() => (up ? 200 : 503));
  const f = await walkFixture({ env: { INGEST_APP_URL: app.url, PIPELINE_TRIGGER_SECRET: 'secret-for-tests' } });
  try {
    for (let i = 0; i < 5; i++) await f.write(`doc-${i}.md`, markdown(`Document ${i}`, 3));
    const first = await walk(f.lifespan, { sourcePath: f.corpus });
    assert.is(first.status, 'completed');
    assert.is(first.items.changed, 5);
    const { rows } = await f.target.db.query<{ n: number }>('SELECT count(*)::int AS n FROM source_documents');
    assert.is(rows[0]!.n, 5, 'the rows landed although the ledger could not be told');
    assert.is(app.got.length, 2 * DEFAULT_WEBHOOK_RETRY.attempts, 'start and finish, each its bounded attempts');

    up = true;
    app.got.length = 0;
    const second = await walk(f.lifespan, { sourcePath: f.corpus });
    assert.equal(
      app.got.map((d) => [d.op_id, d.status]),
      [
        [first.opId, 'completed'],
        [second.opId, 'in_progress'],
        [second.opId, 'completed'],
      ],
    );
    assert.equal(await f.lifespan.store.unsettledRuns(), [], 'nothing is left to deliver');
  } finally {
    await f.dispose();
    await new Promise((resolve) => app.server.close(resolve));
  }
});

test.run();
