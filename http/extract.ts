// POST /extract (docs/behaviour/routes.md#post-extract): HTML in, {text, verdict, warnings} out,
// through the same cleaner as the walk. Accepts raw text/html (bytes, so a meta charset is
// honoured) or JSON {"html": "...", "url"?: "..."}. No fetch is ever performed. 20 MB cap. The
// cleaning runs in the extract thread pool, never on the main thread.

import { Type, type Static } from '@sinclair/typebox';
import type { CleanedHtml } from '../stages/convert/html/index.ts';
import { checkJsonBody, jsonBody, readBody } from './body.ts';
import { HttpError } from './errors.ts';
import { defineRoute } from './route.ts';
import type { Same } from './schemas.ts';

const EXTRACT_MAX_BYTES = 20 * 1024 * 1024;
const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

const ExtractRequest = jsonBody(
  Type.Object(
    {
      html: Type.String({ title: 'the page as a string', description: 'the page' }),
      url: Type.Optional(Type.String({ title: 'a string', description: 'where the page came from; never fetched' })),
    },
    { $id: 'ExtractRequest', description: 'the JSON form; other fields are ignored' },
  ),
  { maxBytes: EXTRACT_MAX_BYTES, required: true, errorNames: { html: 'html_missing' } },
);

const ExtractResult = Type.Object(
  {
    text: Type.String({ description: 'the main content as readable plain text (Markdown-ish headings and lists)' }),
    verdict: Type.Union([Type.Literal('ok'), Type.Literal('thin'), Type.Literal('empty'), Type.Literal('not_html')], {
      description: 'how much to trust text (docs/DECISIONS.md "HTML cleaner")',
    }),
    warnings: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), {
      description: 'snake_case names: e.g. truncated, no_main_block, mostly_links, forum_page',
    }),
  },
  { $id: 'ExtractResult', additionalProperties: false },
);
true satisfies Same<Static<typeof ExtractResult>, Pick<CleanedHtml, 'text' | 'verdict' | 'warnings'>>;

export const extractRoute = defineRoute({
  method: 'POST',
  path: '/extract',
  operationId: 'extract',
  tag: 'extract',
  summary: 'Clean one HTML page into text',
  description: `HTML in, its main content as text out, through the same cleaner as the walk. No fetch is ever performed. Send the page as text/html (or application/xhtml+xml) bytes, so a meta charset is honoured, or as JSON. At most ${EXTRACT_MAX_BYTES} bytes (20 MB), refused as soon as the cap is crossed. Publicly routed.`,
  auth: 'extract',
  rateLimit: 'extract',
  // Read by the handler: the content type picks the bytes or the JSON form.
  body: {
    kind: 'own',
    required: true,
    content: {
      ...Object.fromEntries(HTML_TYPES.map((type) => [type, Type.String()])),
      'application/json': ExtractRequest.schema,
    },
    json: ExtractRequest,
  },
  answers: { 200: { description: 'the cleaned page', schema: ExtractResult } },
  refusals: [
    {
      status: 503,
      error: 'extract_busy',
      when: 'every extract thread is busy and the queue (INGEST_EXTRACT_QUEUE) is full; retry after Retry-After',
      headers: ['Retry-After'],
    },
    {
      status: 415,
      error: 'unsupported_media_type',
      when: `a content type other than ${[...HTML_TYPES, 'application/json'].join(', ')}`,
    },
  ],
  handler:
    ({ extractPool }) =>
    async ({ req, send }) => {
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (!HTML_TYPES.includes(type) && type !== 'application/json')
        throw new HttpError(415, 'unsupported_media_type', 'send text/html, or application/json with an "html" field');
      const body = await readBody(req, EXTRACT_MAX_BYTES);
      const input = type === 'application/json' ? checkJsonBody(ExtractRequest, body.toString('utf8')).html : body;
      send(200, await extractPool.clean(input));
    },
});
