// The health check of a poller with no HTTP server (the bid-worker, the walk worker): exit 0 and
// the last beat while the heartbeat file is fresh, 1 and why not otherwise.

import { readHeartbeat } from '../worker/heartbeat.ts';

export async function heartbeatHealth(command: string, file: string, intervalMs: number): Promise<number> {
  // Three missed beats: one late write is not death.
  const health = await readHeartbeat(file, 3 * intervalMs);
  if (!health.ok) {
    process.stderr.write(`${command}: unhealthy: ${health.reason}\n`);
    return 1;
  }
  process.stdout.write(`${JSON.stringify({ ...health.beat, ageMs: health.ageMs })}\n`);
  return 0;
}
