// How V8 runs a walk: the flags `ingest` starts node with.
//
// The heap. A walk allocates fast and its garbage lives only as long as an item, while its live
// heap stays near 40-60 MB whatever the corpus; V8's defaults, sized from the machine's memory,
// let that garbage pile up instead. The sizes below were chosen when vectors were arrays of
// numbers on the heap (about 1 MB of garbage per document); with them as Float32Arrays off it
// (issue 52), cold walks of 600 and 1,000 documents on PostgreSQL measured them again and kept
// them (bench/README.md "Peak memory, warm walks and CPU against the starting code, in pairs"):
// 8 MB semi-spaces left the peak within its run-to-run scatter at a few % more CPU, 32 MB took a
// tenth off the items' CPU for 35-50 MB more at the peak, and V8's own old-generation growth
// peaked at 384-391 MB instead of 255-268:
//   - the young generation: V8 kept some 80 MB of it; a 16 MB semi-space holds the same walk
//     speed (2,000 documents: anonymous memory 331 -> 251 MB, 30.1 s against 30.0 s; 8 MB saved
//     20 MB more but cost 9 %);
//   - the old generation: after each full collection V8 lets it grow to up to four times what
//     survived; 1.5 times keeps it near the live heap (10,000 documents on PostgreSQL:
//     anonymous 226 -> 131 MB, flat from the first quarter on).
//
// All take effect only when the process starts: bin/ingest.ts's first line and the walk
// benchmark's children pass WALK_V8_FLAGS; the serve engine thread's young generation also
// gets the resource limit (three semi-spaces).
//
// The embedded database's process (lib/db/pglite-process.ts) runs PostgreSQL as WebAssembly,
// and gets flags of its own:
//   - baseline code only (--liftoff-only): V8's optimising tier compiles each hot function
//     again, and PostgreSQL's parser (one 105 KB function) needs some 600 MB of compiler memory
//     for a second, once per process; no flag bounds one function's compilation. An embedded
//     walk of 2,000 documents peaked at 374 MB instead of 915, at 44.7 docs/s instead of 51.8;
//   - a small young generation (2 MB semi-spaces): its JS only relays messages and rows
//     (2,000 documents: its anonymous memory 165 -> 136 MB, at the same walk speed).

export const SEMI_SPACE_MB = 16;
export const HEAP_GROWING_PERCENT = 50;

export const WALK_V8_FLAGS = Object.freeze([
  `--max-semi-space-size=${SEMI_SPACE_MB}`,
  `--heap-growing-percent=${HEAP_GROWING_PERCENT}`,
]);

export const ENGINE_THREAD_LIMITS = Object.freeze({ maxYoungGenerationSizeMb: 3 * SEMI_SPACE_MB });

export const DATABASE_PROCESS_V8_FLAGS = Object.freeze([
  '--liftoff-only',
  '--max-semi-space-size=2',
  `--heap-growing-percent=${HEAP_GROWING_PERCENT}`,
]);
