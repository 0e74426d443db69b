// `ingest mock [--host H] [--port N] [--latency-ms N] [--fault-rate F] [--auth-token T]`: the mock
// model server alone, until SIGINT or SIGTERM. With --auth-token it accepts that credential only
// (401 to any other), standing in for a gateway or the vendor whose key can be dead.

import { parseArgs } from 'node:util';
import type { Logger } from '../lib/log.ts';
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
    },
  });
  const port = Number(values.port);
  const latencyMs = Number(values['latency-ms']);
  const faultRate = Number(values['fault-rate']);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !(latencyMs >= 0) || !(faultRate >= 0 && faultRate <= 1)) {
    throw usageError('--port must be 0-65535, --latency-ms >= 0, --fault-rate between 0 and 1');
  }
  const authToken = values['auth-token'];
  if (authToken !== undefined && authToken.trim() === '') throw usageError('--auth-token must not be blank');
  const mock = await startMockServer(
    { latencyMs, faultRate, ...(authToken === undefined ? {} : { authToken }) },
    { host: values.host, port },
  );
  const checksCredential = authToken !== undefined;
  log.info({ url: mock.url, latencyMs, faultRate, checksCredential }, 'mock model server listening');
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
