// The one way a server of ours (the sidecar, the mock model server) starts listening: a listen
// that fails (the port in use, a port the user may not bind, a host that is not this machine's)
// rejects with ListenError naming the address, instead of an 'error' event nobody hears, which
// Node turns into a raw stack and an exit.

import type { Server } from 'node:net';
import { IngestError } from '../errors.ts';

export class ListenError extends IngestError {
  constructor(host: string, port: number, cause: unknown) {
    const reason = (cause as { code?: string }).code;
    super(
      'listen_failed',
      `cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}: ${WHY[reason ?? ''] ?? (cause as Error).message}` +
        (reason === undefined ? '' : ` (${reason})`),
      { cause },
    );
  }
}

/** What a listen error means to the person who chose the address. */
const WHY: Record<string, string> = {
  EADDRINUSE: 'another process listens there; stop it or choose another --port',
  EACCES: 'this user may not listen on that port; choose one above 1023',
  EADDRNOTAVAIL: 'that address is not one of this machine; choose another --host',
  ENOTFOUND: 'no such host; choose another --host',
  EAI_AGAIN: 'the host name could not be resolved; choose another --host',
};

export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(new ListenError(host, port, error));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}
