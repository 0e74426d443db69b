#!/usr/bin/env -S node --max-semi-space-size=16
// The flag bounds the walk's young generation (lib/engine/heap.ts says why).
import { main } from '../lib/cli.ts';

process.exitCode = await main(process.argv.slice(2));
