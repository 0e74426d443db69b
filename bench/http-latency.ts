// /health and /extract stay responsive while a large walk runs: the engine walks in its worker
// thread, so the main thread's routes should not feel it. Measures p50/p99 latency of each
// route with autocannon, first on an idle sidecar, then while a cold walk of a generated corpus
// runs, and prints the ratio (walking / idle) per figure.
//
//   node bench/http-latency.ts [--docs N] [--seconds S] [--connections C]

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { pino } from 'pino';
import { WALKS_ONLY } from './engines.ts';
import { loadConfig } from '../lib/config.ts';
import { startSidecar } from '../http/server.ts';
import { startMockTier } from './mock-tier.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '600' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
  },
});
const SECONDS = Number(args.seconds);
const CONNECTIONS = Number(args.connections);
const TOKEN = 'bench-token-123456';
const PAGE = `<html><head><title>Bench</title></head><body><nav>a | b</nav><article><h1>Title</h1>${'<p>Paragraph of article text for the cleaner. </p>'.repeat(40)}</article></body></html>`;

const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-http-'));
const corpus = path.join(root, 'corpus');
for (let d = 0; d < Number(args.docs); d++) {
  await mkdir(path.join(corpus, `p${d % 10}`), { recursive: true });
  await writeFile(
    path.join(corpus, `p${d % 10}`, `d${d}.md`),
    `# Doc ${d}\n\n${`Ada Lovelace wrote line ${d} for Northwind Traders. `.repeat(120)}`,
  );
}
const config = loadConfig(
  {
    INGEST_DATA_DIR: path.join(root, 'data'),
    ENGINE_SOURCE_PATH: corpus,
    PIPELINE_TRIGGER_SECRET: TOKEN,
    EXTRACT_API_TOKEN: TOKEN,
    INGEST_PORT: '0',
    INGEST_LOG_LEVEL: 'silent',
    INGEST_RATE_LIMIT_EXTRACT: '100000',
    ...WALKS_ONLY,
  },
  root,
);
// Tier 1 as `ingest serve` starts it: on the main thread, beside the routes measured.
const tier1 = await startMockTier();
const sidecar = await startSidecar(config, pino({ level: 'silent' }));

async function measure(route: '/health' | '/extract') {
  const result = await autocannon({
    url: `${sidecar.url}${route}`,
    connections: CONNECTIONS,
    duration: SECONDS,
    ...(route === '/extract'
      ? { method: 'POST', body: PAGE, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/html' } }
      : {}),
  });
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: result.requests.average,
    errors: result.errors + result.non2xx,
  };
}

try {
  const idle = { health: await measure('/health'), extract: await measure('/extract') };
  const accepted = await fetch(`${sidecar.url}/walk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const { requestId } = (await accepted.json()) as { requestId: string };
  const walking = { health: await measure('/health'), extract: await measure('/extract') };
  const status = (await (
    await fetch(`${sidecar.url}/walk-status/${requestId}`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as { state: string };
  console.log('| route | idle p50 / p99 ms | during walk p50 / p99 ms | p99 ratio | req/s idle / walking | errors |');
  console.log('|---|---|---|---|---|---|');
  for (const route of ['health', 'extract'] as const) {
    const a = idle[route];
    const b = walking[route];
    console.log(
      `| /${route} | ${a.p50} / ${a.p99} | ${b.p50} / ${b.p99} | ${(b.p99 / Math.max(1, a.p99)).toFixed(2)} | ${Math.round(a.rps)} / ${Math.round(b.rps)} | ${a.errors + b.errors} |`,
    );
  }
  console.log(
    `\nwalk state when the second measurement ended: ${status.state} (${args.docs} documents); ${CONNECTIONS} connections, ${SECONDS} s per figure; node ${process.version}`,
  );
} finally {
  await sidecar.stop(60_000);
  await tier1.stop();
  rmSync(root, { recursive: true, force: true });
}
