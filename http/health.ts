// GET /health (docs/behaviour/routes.md#get-health): 200 while the engine worker thread is alive,
// 503 after it died. No data is returned.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EngineThread } from '../engine/thread-handle.ts';

export function healthRoute(engine: Pick<EngineThread, 'alive'>) {
  return async (_req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.writeHead(engine.alive ? 200 : 503, { 'cache-control': 'no-store', 'content-length': '0' }).end();
  };
}
