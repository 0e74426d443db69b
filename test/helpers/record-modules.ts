// Loaded with `node --import` into a child process: records every module it resolves, and at
// exit writes `{modules, maxRssKb}` as JSON to the file named by INGEST_RECORD_MODULES_TO, so a
// test or a benchmark can see what a command loaded and how much memory it held. Never import
// it into a test's own process: it would record that process.

import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';

const out = process.env.INGEST_RECORD_MODULES_TO;
const modules = new Set<string>();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    modules.add(resolved.url);
    return resolved;
  },
});

process.on('exit', () => {
  if (out !== undefined)
    writeFileSync(out, JSON.stringify({ modules: [...modules], maxRssKb: process.resourceUsage().maxRSS }));
});
