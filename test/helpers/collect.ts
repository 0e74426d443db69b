// Everything an async iterable yields, in order (Array.fromAsync is past the language level the
// project compiles against).

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
