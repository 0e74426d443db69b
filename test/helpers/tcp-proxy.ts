// A loopback TCP proxy that can be cut: to a client the database behind it then looks stopped
// (open connections reset, new ones refused) until it is resumed on the same port. Frozen, it
// looks hung instead: connections stay open and accepted, and nothing passes either way.

import net, { type AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Resets every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port, and forwards them. */
  resume(): Promise<void>;
  /** Forwards nothing more, on open connections or new ones, until cut. */
  freeze(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let frozen = false;
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (frozen) return void client.pause();
    const server = net.connect(upstream);
    track(server);
    client.pipe(server).pipe(client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen(0);
  const { port } = server.address() as AddressInfo;
  const stop = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.resetAndDestroy();
    await closed;
  };
  const freeze = () => {
    frozen = true;
    for (const socket of sockets) {
      socket.unpipe();
      socket.pause();
    }
  };
  const resume = () => {
    frozen = false;
    return listen(port);
  };
  return { port, cut: stop, resume, freeze, close: () => (server.listening ? stop() : Promise.resolve()) };
}
