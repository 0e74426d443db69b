// Deterministic embeddings for the mock tier: character trigrams hashed into the requested
// number of dimensions with a sign, then L2-normalised. Similar texts share trigrams and so
// get similar vectors, which keeps similarity-driven passes (entity resolution, Q&A dedup)
// plausible offline. Pure and fast; no model.

import { createHash } from 'node:crypto';

export function mockEmbedding(text: string, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  const normalised = ` ${text.toLowerCase().replace(/\s+/g, ' ').trim()} `;
  const chars = Array.from(normalised);
  for (let i = 0; i + 3 <= chars.length; i++) {
    const digest = createHash('md5').update(chars.slice(i, i + 3).join('')).digest();
    const bucket = digest.readUInt32LE(0) % dimensions;
    vector[bucket]! += digest[4]! & 1 ? 1 : -1;
  }
  let norm = 0;
  for (const v of vector) norm += v * v;
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < vector.length; i++) vector[i]! *= scale;
  return vector;
}

/** The OpenAI wire form of `encoding_format: "base64"`: little-endian float32 bytes. */
export function toBase64(vector: Float32Array): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}
