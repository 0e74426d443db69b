#!/usr/bin/env -S node --max-semi-space-size=16 --heap-growing-percent=50
// The flags are lib/v8-flags.ts's WALK_V8_FLAGS (it says why); test/cli.test.ts keeps them equal.
import { main } from '../cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
