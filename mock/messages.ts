// The mock's /v1/messages (docs/behaviour/tiers.md#mock-server-contract): a request's system text
// must equal a registered prompt exactly (else 400 naming the mock); a request without a system
// block gets the text "pong" (the credential preflight). The answer is a tool_use block when the
// request forces a tool, else text; streamed answers use the vendor's full event grammar and end
// with stop_reason end_turn.

import type { ServerResponse } from 'node:http';

export interface MessagesRequest {
  model: string;
  system?: string | { type: string; text?: string }[];
  messages: { role: string; content: string | { type: string; text?: string }[] }[];
  tools?: { name: string; input_schema: unknown }[];
  tool_choice?: { type: string; name?: string };
  stream?: boolean;
  max_tokens?: number;
}

/** Answers one registered prompt: the tool input (or text) the mock model returns. */
export type PromptResponder = (request: MessagesRequest) => unknown;

export type MockReply =
  { status: 200; content: ContentBlock[] } | { status: number; errorType: string; message: string };

type ContentBlock = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

export function systemText(request: MessagesRequest): string | null {
  if (request.system === undefined) return null;
  if (typeof request.system === 'string') return request.system;
  return request.system.map((block) => block.text ?? '').join('');
}

export function answer(
  request: MessagesRequest,
  prompts: ReadonlyMap<string, PromptResponder>,
  nextId: () => string,
): MockReply {
  if (!Array.isArray(request.messages) || typeof request.model !== 'string') {
    return {
      status: 400,
      errorType: 'invalid_request_error',
      message: 'mock model server: model and messages are required',
    };
  }
  const system = systemText(request);
  if (system === null || system === '') return { status: 200, content: [{ type: 'text', text: 'pong' }] };
  const responder = prompts.get(system);
  if (responder === undefined) {
    return {
      status: 400,
      errorType: 'invalid_request_error',
      message:
        `mock model server: unrecognised system prompt (${system.length} chars, starting ` +
        `"${system.slice(0, 60)}"); it answers only the registered extractor prompts`,
    };
  }
  const output = responder(request);
  const forced = request.tool_choice?.type === 'tool' ? request.tool_choice.name : undefined;
  const tool = request.tools?.find((t) => t.name === forced) ?? (forced === undefined ? undefined : null);
  if (tool === null)
    return {
      status: 400,
      errorType: 'invalid_request_error',
      message: `mock model server: tool_choice names unknown tool ${forced}`,
    };
  if (tool !== undefined)
    return {
      status: 200,
      content: [{ type: 'tool_use', id: `toolu_mock_${nextId()}`, name: tool.name, input: output }],
    };
  return {
    status: 200,
    content: [{ type: 'text', text: typeof output === 'string' ? output : JSON.stringify(output) }],
  };
}

/** The tokens an answer counts: its usage, and what the mock's rate limits (mock/limits.ts) debit. */
export function usage(request: MessagesRequest, content: ContentBlock[]) {
  // The system prompt and the tools count as input, as the vendor counts them.
  const input = JSON.stringify([request.system ?? '', request.tools ?? [], request.messages]).length;
  const output = JSON.stringify(content).length;
  return { input_tokens: Math.ceil(input / 4), output_tokens: Math.ceil(output / 4) };
}

export function messageBody(request: MessagesRequest, content: ContentBlock[], id: string) {
  return {
    id: `msg_mock_${id}`,
    type: 'message',
    role: 'assistant',
    model: request.model,
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: usage(request, content),
  };
}

/** Writes the answer as server-sent events in the vendor's grammar. */
export function streamMessage(
  res: ServerResponse,
  request: MessagesRequest,
  content: ContentBlock[],
  id: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
  const send = (event: string, data: object) =>
    res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  const { input_tokens, output_tokens } = usage(request, content);
  send('message_start', {
    message: {
      id: `msg_mock_${id}`,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens, output_tokens: 1 },
    },
  });
  send('ping', {});
  content.forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of split(block.text))
        send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    } else {
      send('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      for (const piece of split(JSON.stringify(block.input)))
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens } });
  send('message_stop', {});
  res.end();
}

/** Deltas of a few dozen characters, as a real stream delivers them. */
function split(text: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += 40) pieces.push(text.slice(i, i + 40));
  return pieces.length > 0 ? pieces : [''];
}
