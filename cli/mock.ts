// `ingest mock [--host H] [--port N] [--latency-ms N] [--fault-rate F] [--auth-token T] [--limit-...]
// [--batch-...]`: the mock model server alone, until SIGINT or SIGTERM. With --auth-token it
// accepts that credential only (401 to any other), standing in for a gateway or the vendor whose
// key can be dead; with --limit-requests / --limit-tokens / --limit-input-tokens /
// --limit-output-tokens it enforces a provider's rate limits per model over a --limit-window-ms
// window (fixed or sliding, --limit-window), answering 429 past them (mock/README.md "Rate
// limits"). Its Message Batches run --batch-delay-ms before they end, and --batch-error-rate /
// --batch-expire-rate of their requests end errored / expired (mock/README.md "Message batches").

import { parseArgs } from 'node:util';
import type { Logger } from '../lib/log.ts';
import type { BatchOptions } from '../mock/batches.ts';
import { LIMIT_DIMENSIONS, type MockLimits } from '../mock/limits.ts';
import { DEFAULT_MOCK_PORT, startMockServer } from '../mock/server.ts';
import { usageError } from './usage.ts';

export async function mockCommand(args: string[], { log }: { log: Logger }): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: String(DEFAULT_MOCK_PORT) },
      'latency-ms': { type: 'string', default: '0' },
      'fault-rate': { type: 'string', default: '0' },
      'auth-token': { type: 'string' },
      'limit-window-ms': { type: 'string', default: '60000' },
      'limit-window': { type: 'string', default: 'fixed' },
      'batch-delay-ms': { type: 'string', default: '0' },
      'batch-error-rate': { type: 'string', default: '0' },
      'batch-expire-rate': { type: 'string', default: '0' },
      ...Object.fromEntries(LIMIT_DIMENSIONS.map((d) => [`limit-${d}`, { type: 'string' as const }])),
    },
  });
  const port = Number(values.port);
  const latencyMs = Number(values['latency-ms']);
  const faultRate = Number(values['fault-rate']);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !(latencyMs >= 0) || !isRate(faultRate)) {
    throw usageError('--port must be 0-65535, --latency-ms >= 0, --fault-rate between 0 and 1');
  }
  const authToken = values['auth-token'];
  if (authToken !== undefined && authToken.trim() === '') throw usageError('--auth-token must not be blank');
  const limits = limitsOf(values as Record<string, string | undefined>);
  const batches = batchesOf(values);
  const mock = await startMockServer(
    {
      latencyMs,
      faultRate,
      batches,
      ...(authToken === undefined ? {} : { authToken }),
      ...(limits === undefined ? {} : { limits }),
    },
    { host: values.host, port },
  );
  const checksCredential = authToken !== undefined;
  log.info({ url: mock.url, latencyMs, faultRate, checksCredential, limits, batches }, 'mock model server listening');
  process.stdout.write(
    `mock model server on ${mock.url} (ANTHROPIC_BASE_URL=${mock.url} OPENAI_BASE_URL=${mock.url}/v1)` +
      `${checksCredential ? '; it accepts only the --auth-token credential' : ''}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await mock.close();
  return 0;
}

/** The --limit-* flags as the mock's rate limits; undefined when no dimension is limited. */
function limitsOf(values: Record<string, string | undefined>): MockLimits | undefined {
  const windowMs = Number(values['limit-window-ms']);
  const window = values['limit-window'];
  if (!Number.isInteger(windowMs) || windowMs < 1 || (window !== 'fixed' && window !== 'sliding'))
    throw usageError('--limit-window-ms must be a whole number of ms >= 1, --limit-window fixed or sliding');
  const per: MockLimits['per'] = {};
  for (const dimension of LIMIT_DIMENSIONS) {
    const raw = values[`limit-${dimension}`];
    if (raw === undefined) continue;
    const limit = Number(raw);
    if (!Number.isInteger(limit) || limit < 1) throw usageError(`--limit-${dimension} must be a whole number >= 1`);
    per[dimension] = limit;
  }
  return Object.keys(per).length === 0 ? undefined : { windowMs, window, per };
}

const isRate = (n: number) => n >= 0 && n <= 1;

/** The --batch-* flags as the mock's batch knobs. */
function batchesOf(values: {
  'batch-delay-ms': string;
  'batch-error-rate': string;
  'batch-expire-rate': string;
}): BatchOptions {
  const delayMs = Number(values['batch-delay-ms']);
  const errorRate = Number(values['batch-error-rate']);
  const expireRate = Number(values['batch-expire-rate']);
  // One draw per request decides both, so the two shares cannot add up to more than every request.
  if (
    !Number.isFinite(delayMs) ||
    delayMs < 0 ||
    !isRate(errorRate) ||
    !isRate(expireRate) ||
    errorRate + expireRate > 1
  )
    throw usageError(
      '--batch-delay-ms must be a number of ms >= 0, --batch-error-rate and --batch-expire-rate between 0 and 1 ' +
        'and together at most 1',
    );
  return { delayMs, errorRate, expireRate };
}
