#!/bin/sh
//bin/true; exec "$(dirname -- "$(readlink -f -- "$0")")/node24" --max-semi-space-size=16 --heap-growing-percent=50 "$0" "$@"
// Both a shell script and a module: run as a program, the shell runs the line above (to the
// shell `//bin/true` is a command, to Node a comment) and bin/node24 finds a Node that can run
// TypeScript; run as `node bin/ingest.ts`, Node skips both lines. The flags are lib/v8-flags.ts's
// WALK_V8_FLAGS (it says why); test/cli.test.ts keeps them equal.
import { main } from '../cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
