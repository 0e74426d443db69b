// A loopback relay to the mock model server that holds back the answers to one tool's calls
// (a seeded random time each, or a fixed one), so that a test sees those calls in flight and their
// answers overtake one another, and records when each was sent and answered.

import http from 'node:http';
import { serveHttp, type LoopbackServer } from './loopback.ts';

export interface ModelRelay extends LoopbackServer {
  /** The held calls by the order they were sent, in the order their answers came back. */
  readonly answered: readonly number[];
  /** Per held call, by the order sent: how many held answers had come back when it was sent. */
  readonly answeredWhenSent: readonly number[];
  /** The most held calls in flight at once. */
  readonly peak: number;
}

/** A seeded generator of numbers in [0, 1) (mulberry32). */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Relays every request to `target`; the answers to calls of `tool` come back after `holdMs()` ms. */
export async function modelRelay(target: string, tool: string, holdMs: () => number): Promise<ModelRelay> {
  const answered: number[] = [];
  const answeredWhenSent: number[] = [];
  let inFlight = 0;
  let peak = 0;
  const server = await serveHttp((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const held = body.includes(`"${tool}"`) ? answeredWhenSent.push(answered.length) - 1 : null;
      if (held !== null) peak = Math.max(peak, ++inFlight);
      const forward = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        const reply: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => reply.push(chunk));
        answer.on('end', () => {
          const send = () => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(reply));
          };
          if (held === null) return send();
          setTimeout(() => {
            answered.push(held);
            inFlight -= 1;
            send();
          }, holdMs());
        });
      });
      forward.end(body);
    });
  });
  return {
    ...server,
    answered,
    answeredWhenSent,
    get peak() {
      return peak;
    },
  };
}
