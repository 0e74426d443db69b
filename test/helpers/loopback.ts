// Loopback servers for the fetch tests: real HTTP servers, a trap listener that must never see
// a connection, and a watch on every outgoing socket of this process (node:diagnostics_channel),
// so a test can prove that no connection was even attempted. Tests send traffic only here.

import dc from 'node:diagnostics_channel';
import http from 'node:http';
import net from 'node:net';

export interface LoopbackServer {
  host: string;
  port: number;
  /** http://host:port (IPv6 hosts bracketed). */
  origin: string;
  close(): Promise<void>;
}

function closer(server: net.Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      (server as http.Server).closeAllConnections?.();
      server.close(() => resolve());
    });
}

function listen(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
  });
}

export async function serveHttp(handler: http.RequestListener, host = '127.0.0.1', port = 0): Promise<LoopbackServer> {
  const server = http.createServer(handler);
  const bound = await listen(server, host, port);
  return {
    host,
    port: bound,
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: closer(server),
  };
}

export interface Trap extends LoopbackServer {
  /** Connections the trap accepted: a test passes only while this stays 0. */
  readonly connections: number;
}

/** A TCP listener standing in for a forbidden service (a metadata endpoint, an admin port). */
export async function trapListener(host = '127.0.0.1', port = 0): Promise<Trap> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  const bound = await listen(server, host, port);
  return {
    host,
    port: bound,
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: closer(server),
    get connections() {
      return connections;
    },
  };
}

/** Records the address of every connection attempt any client socket of this process makes. */
export function watchConnectionAttempts(): { attempts: string[]; stop(): void } {
  const attempts: string[] = [];
  const onSocket = (message: unknown) => {
    (message as { socket: net.Socket }).socket.on('connectionAttempt', (ip: string, port: number) =>
      attempts.push(`${ip}:${port}`),
    );
  };
  dc.subscribe('net.client.socket', onSocket);
  return { attempts, stop: () => dc.unsubscribe('net.client.socket', onSocket) };
}

/** Hostile answers for the fetch caps. */
export const hostile = {
  /** Headers, then one byte every `everyMs` for ever (slow-loris). */
  trickle:
    (everyMs: number): http.RequestListener =>
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      const timer = setInterval(() => res.write(' '), everyMs);
      res.on('close', () => clearInterval(timer));
    },
  /** A body that never ends, written as fast as the client reads. */
  endless: (_req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/html' });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  },
  /** Declares 10 GB, sends a little, and waits. */
  tenGigabytes: (_req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(10 * 1024 ** 3) });
    res.write(Buffer.alloc(1024, 0x61));
  },
};

/** An API error a gateway answers itself instead of relaying. */
export interface GatewayRefusal {
  status: number;
  type: string;
  message: string;
  headers?: Record<string, string>;
}

/**
 * A gateway on loopback in front of `target` (a mock model server): each request is answered by
 * `refuse` when it returns a refusal, in the vendor's error shape, and relayed to `target` otherwise.
 */
export function serveGateway(
  target: string,
  refuse: (req: http.IncomingMessage) => GatewayRefusal | null,
): Promise<LoopbackServer> {
  return serveHttp((req, res) => {
    const refusal = refuse(req);
    if (refusal !== null) {
      req.resume();
      res.writeHead(refusal.status, { 'content-type': 'application/json', ...refusal.headers });
      res.end(JSON.stringify({ type: 'error', error: { type: refusal.type, message: refusal.message } }));
      return;
    }
    req.pipe(
      http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      }),
    );
  });
}
