// Deterministic embeddings for the mock tier: character trigrams hashed into the requested
// number of dimensions with a sign, then L2-normalised. Similar texts share trigrams and so
// get similar vectors, which keeps similarity-driven passes (entity resolution, Q&A dedup)
// plausible offline. Pure and fast, no model: the mock often runs in the walk's own process
// (tier 1), so every microsecond it spends is taken from the walk it serves.

export function mockEmbedding(text: string, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  const normalised = ` ${text.toLowerCase().replace(/\s+/g, ' ').trim()} `;
  const points = Array.from(normalised, (c) => c.codePointAt(0)!);
  for (let i = 0; i + 3 <= points.length; i++) {
    const h = trigramHash(points[i]!, points[i + 1]!, points[i + 2]!);
    // Low bits pick the bucket, the top bit the sign: independent bits of one well-mixed hash.
    vector[(h >>> 0) % dimensions]! += h < 0 ? -1 : 1;
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

/** FNV-1a over three code points, then murmur3's finaliser so that every output bit is mixed. */
function trigramHash(a: number, b: number, c: number): number {
  let h = 0x811c9dc5;
  h = Math.imul(h ^ a, 0x01000193);
  h = Math.imul(h ^ b, 0x01000193);
  h = Math.imul(h ^ c, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The OpenAI wire form of `encoding_format: "base64"`: little-endian float32 bytes. */
export function toBase64(vector: Float32Array): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}
