// A V8 CPU profile of one stretch of this process (bench/walk.ts --cpu-prof DIR: the cold walk),
// and its top items: run alone on a profile, it prints where the sampled time went.
//
//   node bench/cpu-profile.ts FILE.cpuprofile [--top N]
//
// Self time is a function's own samples; the groups add up the self time of the package or
// project folder a function lives in, and name the engine's own work apart (garbage collector,
// system calls) so that "where the CPU goes" reads in a few lines.

import { mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Starts profiling this process: CPU, and allocations sampled (those collected since
 * included: the allocation rate is what costs, not what stays). The function returned stops and
 * writes `DIR/NAME.cpuprofile` and `DIR/NAME.heapprofile` (both open in Chrome's DevTools).
 */
export async function startCpuProfile(dir: string, name: string): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 64 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    const { profile: allocations } = await session.post('HeapProfiler.stopSampling');
    session.disconnect();
    mkdirSync(dir, { recursive: true });
    await writeFile(path.join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    await writeFile(path.join(dir, `${name}.heapprofile`), JSON.stringify(allocations));
  };
}

const IDLE = new Set(['(idle)', '(program)']);

/** Where a frame lives, shortened: a package by its name, a project file by its path. */
function placeOf(url: string): string {
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inPackage) return inPackage[1]!;
  const project = /^file:\/\/.*?\/((?:bench|cli|engine|http|lib|mock|stages|worker)\/.*)$/.exec(url);
  return project ? project[1]! : url === '' ? '(native)' : url;
}

/** Busy milliseconds, and self milliseconds per function and per place, largest first. */
export function summarize(profile: Profile, top: number) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfByNode = new Map<number, number>();
  profile.samples.forEach((id, i) => selfByNode.set(id, (selfByNode.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let busyUs = 0;
  for (const [id, us] of selfByNode) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (IDLE.has(functionName)) continue;
    busyUs += us;
    const place = placeOf(url);
    const fn = `${functionName || '(anonymous)'} ${place === '(native)' ? '' : `${place}:${lineNumber + 1}`}`.trim();
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const group = place === '(native)' ? functionName : place;
    byPlace.set(group, (byPlace.get(group) ?? 0) + us);
  }
  const largest = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: us / busyUs }));
  return { busyMs: Math.round(busyUs / 1000), functions: largest(byFunction), places: largest(byPlace) };
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    options: { top: { type: 'string', default: '20' } },
    allowPositionals: true,
  });
  const file = positionals[0];
  if (file === undefined) {
    console.error('usage: node bench/cpu-profile.ts FILE.cpuprofile [--top N]');
    process.exit(2);
  }
  const summary = summarize(JSON.parse(await readFile(file, 'utf8')) as Profile, Number(values.top));
  const line = (x: { name: string; ms: number; share: number }) =>
    `${String(x.ms).padStart(7)} ms ${(100 * x.share).toFixed(1).padStart(5)} %  ${x.name}`;
  console.log(`${summary.busyMs} ms busy (idle left out)\n\nself time by function:`);
  for (const x of summary.functions) console.log(line(x));
  console.log('\nself time by package or project file:');
  for (const x of summary.places) console.log(line(x));
}
