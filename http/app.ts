// The sidecar's routes (docs/behaviour/routes.md) on polka: each route's definition (http/routes.ts) is registered with
// the checks its definition asks for in front of it (http/access.ts), and every thrown
// HttpError becomes the one error body. Anything else thrown is logged and answered 500
// without its message.

import type { IncomingMessage, ServerResponse } from 'node:http';
import polka from 'polka';
import { Admission } from './access.ts';
import { HttpError, sendError } from './errors.ts';
import type { AppDeps } from './route.ts';
import { ROUTES } from './routes.ts';

/** A path template's {name} parameters as polka writes them (:name). */
const polkaPattern = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

export function createApp(deps: AppDeps) {
  const { log } = deps;
  const admission = new Admission(deps.config);
  const app = polka({
    onNoMatch: (req, res) =>
      sendError(res, new HttpError(404, 'not_found', `no route ${req.method} ${req.url?.split('?')[0]}`)),
  });
  for (const route of ROUTES) {
    const admit = admission.of(route);
    const handle = route.bind(deps);
    const middleware: polka.Middleware = (req, res) => {
      admit(req)
        .then(() => handle(req, res))
        .catch((error: unknown) => answerFailure(req, res, error));
    };
    app.add(route.method, polkaPattern(route.path), middleware);
  }
  return app;

  function answerFailure(req: IncomingMessage, res: ServerResponse, error: unknown): void {
    if (res.headersSent) return;
    if (error instanceof HttpError) return sendError(res, error);
    log.error({ err: error, path: req.url }, 'request failed');
    sendError(res, new HttpError(500, 'internal_error', 'the request failed; the sidecar logged why'));
  }
}
