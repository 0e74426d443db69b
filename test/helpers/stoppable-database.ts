// A database a test can stop and start again: PostgreSQL behind a loopback proxy that is cut
// (to a client, a server gone: connections reset, then refused), or the embedded database,
// whose process is killed (the next open starts a new one). Or hang: the proxy frozen (nothing
// passes, connections stay open), the embedded database's process stopped (SIGSTOP).

import path from 'node:path';
import { loadConfig } from '../../lib/config.ts';
import { leaseHolder } from '../../lib/lease.ts';
import { openTestDatabase, type TestDatabase } from './db.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

export interface StoppableDatabase {
  env: Record<string, string>;
  stop(): Promise<void>;
  /** Stops answering without going; restart() after it serves again (for PostgreSQL: after stop()). */
  hang(): Promise<void>;
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

/** PostgreSQL behind a proxy that can be cut, or the embedded database in a data directory. */
export async function stoppableDatabase(dataDir: string, root: string): Promise<StoppableDatabase> {
  if (!process.env.ENGINE_DB_DSN) {
    const lock = path.join(loadConfig({ INGEST_DATA_DIR: dataDir }, root).database.embeddedDir, 'ingest.lock');
    const signal = async (name: NodeJS.Signals): Promise<void> =>
      void process.kill((await leaseHolder(lock, Number.POSITIVE_INFINITY))!.pid, name);
    return {
      env: {},
      stop: () => signal('SIGKILL'),
      hang: () => signal('SIGSTOP'),
      restart: async () => {},
      dispose: async () => {},
    };
  }
  const target: TestDatabase = await openTestDatabase();
  const dsn = new URL(target.dsn!);
  const proxy: TcpProxy = await startTcpProxy({ host: dsn.hostname, port: Number(dsn.port || 5432) });
  dsn.host = `127.0.0.1:${proxy.port}`;
  return {
    env: { ENGINE_DB_DSN: dsn.toString() },
    stop: () => proxy.cut(),
    hang: async () => proxy.freeze(),
    restart: () => proxy.resume(),
    async dispose() {
      await proxy.close();
      await target.dispose();
    },
  };
}
