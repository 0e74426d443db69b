// `ingest extract [FILE|-]`: the HTML cleaner behind POST /extract on one file or on stdin,
// printing its result ({text, verdict, warnings, title}) as JSON. Bytes go in undecoded, so a
// BOM or meta charset is honoured exactly as for the route and the walk.

import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { cleanHtml } from '../stages/convert/html/index.ts';

export async function extractCommand(args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
  if (positionals.length > 1) {
    process.stderr.write(
      'ingest: extract takes one FILE, or - (or nothing) for stdin\nusage: ingest extract [FILE|-]\n',
    );
    return 2;
  }
  const source = positionals[0] ?? '-';
  let bytes: Uint8Array;
  try {
    bytes = source === '-' ? await readStdin() : await readFile(source);
  } catch (error) {
    process.stderr.write(
      `ingest: cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`,
    );
    return 1;
  }
  process.stdout.write(`${JSON.stringify(cleanHtml(bytes))}\n`);
  return 0;
}

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
