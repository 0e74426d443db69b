#!/usr/bin/env -S node --max-semi-space-size=16 --heap-growing-percent=50
// The flags are lib/engine/heap.ts's WALK_HEAP_FLAGS (it says why); test/cli.test.ts keeps them equal.
import { main } from '../lib/cli.ts';

process.exitCode = await main(process.argv.slice(2));
