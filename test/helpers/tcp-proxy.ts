// A loopback TCP proxy that can be cut: to a client the database behind it then looks stopped
// (open connections reset, new ones refused) until it is resumed on the same port.

import net, { type AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Resets every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    const server = net.connect(upstream);
    track(client);
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
  return { port, cut: stop, resume: () => listen(port), close: () => (server.listening ? stop() : Promise.resolve()) };
}
