// Runs in the /extract thread pool: the cleaner is CPU-bound (seconds on a 20 MB page), and on
// the main thread it would stall /health and every other request while it works.

import { cleanHtml, type CleanedHtml } from '../stages/convert/html/index.ts';

export default function clean(input: string | Uint8Array): Pick<CleanedHtml, 'text' | 'verdict' | 'warnings'> {
  const { text, verdict, warnings } = cleanHtml(input);
  return { text, verdict, warnings };
}
