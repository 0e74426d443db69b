// How large V8 may let a walk's young generation grow. A walk allocates fast and its garbage
// lives only as long as an item (vectors as number arrays, about 1 MB per document), so V8's
// default, sized from the machine's memory, kept some 80 MB of young-generation space that a
// 16 MB semi-space does not need: measured on 2,000 documents, anonymous memory 331 -> 251 MB
// at the same walk time (30.1 s against 30.0 s); 8 MB saved 20 MB more but cost 9 %.
//
// Processes get it as the flag --max-semi-space-size=16 (bin/ingest.ts's first line, the walk
// benchmark's children); threads as a resource limit (the young generation is three
// semi-spaces).

export const SEMI_SPACE_MB = 16;

export const ENGINE_THREAD_LIMITS = Object.freeze({ maxYoungGenerationSizeMb: 3 * SEMI_SPACE_MB });
