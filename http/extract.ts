// POST /extract (docs/behaviour/routes.md#post-extract): HTML in, {text, verdict, warnings} out,
// through the same cleaner as the walk. Accepts raw text/html (bytes, so a meta charset is
// honoured) or JSON {"html": "...", "url"?: "..."}. No fetch is ever performed. 20 MB cap. The
// cleaning runs in the extract thread pool, never on the main thread.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from './body.ts';
import { HttpError, sendJson } from './errors.ts';
import type { ExtractPool } from './extract-pool.ts';

export const EXTRACT_MAX_BYTES = 20 * 1024 * 1024;

export const extractRoute =
  (pool: ExtractPool) =>
  async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'text/html' && type !== 'application/json' && type !== 'application/xhtml+xml') {
      throw new HttpError(415, 'unsupported_media_type', 'send text/html, or application/json with an "html" field');
    }
    const body = await readBody(req, EXTRACT_MAX_BYTES);
    let input: string | Uint8Array = body;
    if (type === 'application/json') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        throw new HttpError(400, 'invalid_json', 'the body is not valid JSON');
      }
      const html = (parsed as { html?: unknown })?.html;
      if (typeof html !== 'string') throw new HttpError(400, 'html_missing', 'the JSON body needs an "html" string');
      input = html;
    }
    sendJson(res, 200, await pool.clean(input));
  };
