// The layout's arrows (docs/ARCHITECTURE.md#layers) and the dependency facades
// (docs/behaviour/versioning.md#dependency-pins), checked over every runtime module's imports,
// type-only imports included:
//   bin -> cli -> {http, worker, engine, stages, lib, mock, bench}; http -> {engine, stages, lib};
//   bench -> {http, worker, engine, stages, lib, mock}; worker -> {engine, stages, lib};
//   engine -> {stages, lib}; stages -> lib; mock -> lib; lib -> nothing outside lib.
// bench/ sits under cli/ (`ingest bench corpus` writes its corpus) and so never imports cli/; it
// drives the layers below as a caller would, and imports nothing from test/ (test/ is no layer:
// the tests may import anything, bench/ included).
// No file-level cycle either: where two modules share a type, it lives in a file of its own.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  bin: ['cli'],
  cli: ['http', 'worker', 'engine', 'stages', 'lib', 'mock', 'bench'],
  bench: ['http', 'worker', 'engine', 'stages', 'lib', 'mock'],
  http: ['engine', 'stages', 'lib'],
  worker: ['engine', 'stages', 'lib'],
  engine: ['stages', 'lib'],
  stages: ['lib'],
  mock: ['lib'],
  lib: [],
};

/** Each package wrapped by one facade module: a bump of it stays in that module. */
export const FACADES: Readonly<Record<string, string>> = {
  lmdb: 'lib/state/store.ts',
  '@electric-sql/pglite': 'lib/db/pglite-wasm.ts',
  '@electric-sql/pglite-pgvector': 'lib/db/pglite-wasm.ts',
  pg: 'lib/db/postgres.ts',
  'pg-boss': 'lib/queue/job-queue.ts',
  'pg-copy-streams': 'lib/db/postgres.ts',
  '@anthropic-ai/sdk': 'lib/llm/client.ts',
  openai: 'lib/embed/client.ts',
  chardet: 'stages/convert/text-decode.ts',
};

const IMPORT =
  /^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

/** The specifiers a module imports (static, side-effect, type-only and dynamic), comments aside. */
export function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...code.matchAll(IMPORT)].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

export type Graph = Map<string, { relative: string[]; packages: string[] }>;

/** Repository-relative module -> the modules and packages it imports. */
export function graphOf(modules: ReadonlyMap<string, string>): Graph {
  const graph: Graph = new Map();
  for (const [file, source] of modules) {
    const relative: string[] = [];
    const packages: string[] = [];
    for (const specifier of importsOf(source)) {
      if (specifier.startsWith('.'))
        relative.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)));
      else if (!specifier.startsWith('node:'))
        packages.push(
          specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!,
        );
    }
    graph.set(file, { relative, packages });
  }
  return graph;
}

const layerOf = (file: string) => file.split('/')[0]!;

export function layerViolations(graph: Graph): string[] {
  const out: string[] = [];
  for (const [file, { relative }] of graph) {
    const from = layerOf(file);
    for (const target of relative) {
      const to = layerOf(target);
      if (to !== from && !(LAYERS[from] ?? []).includes(to)) out.push(`${file} -> ${target}`);
    }
  }
  return out;
}

export function facadeViolations(graph: Graph): string[] {
  const out: string[] = [];
  for (const [file, { packages }] of graph) {
    for (const pkg of packages)
      if (FACADES[pkg] !== undefined && FACADES[pkg] !== file)
        out.push(`${file} imports ${pkg} (its facade is ${FACADES[pkg]})`);
  }
  return out;
}

/** Every file-level cycle, as the modules of each strongly connected component (Tarjan). */
export function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.relative ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)!.relative.includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

async function runtimeModules(): Promise<Map<string, string>> {
  const modules = new Map<string, string>();
  const scan = async (dir: string): Promise<void> => {
    for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true }).catch(() => [])) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) await scan(rel);
      else if (entry.name.endsWith('.ts')) modules.set(rel, await readFile(path.join(ROOT, rel), 'utf8'));
    }
  };
  for (const layer of Object.keys(LAYERS)) await scan(layer);
  return modules;
}

const graph = graphOf(await runtimeModules());

test('the checker reads every kind of import and ignores comments', () => {
  const source = [
    "import { a } from './a.ts';",
    "import type { B } from '../lib/b.ts';",
    "export { c } from './c.ts';",
    "import './side-effect.ts';",
    "const d = await import('./d.ts');",
    "// import { e } from './commented.ts';",
    "import {\n  f,\n  g,\n} from 'pg';",
  ].join('\n');
  assert.equal(importsOf(source), ['./a.ts', '../lib/b.ts', './c.ts', './side-effect.ts', './d.ts', 'pg']);
});

test('a wrong import is caught: lib reaching up into the engine, a stage into http, mock into the engine, bench into test/ or cli/', () => {
  const wrong = graphOf(
    new Map([
      ['lib/config.ts', "import { walk } from '../engine/walk.ts';"],
      ['stages/chunk.ts', "import type { WalkRegistry } from '../http/walk-registry.ts';"],
      ['mock/server.ts', "import { fencedWalk } from '../engine/fenced-walk.ts';"],
      ['bench/walk.ts', "import { startMockTier } from '../test/helpers/mock-tier.ts';"],
      ['bench/report.ts', "import { main } from '../cli/main.ts';"],
      ['engine/walk.ts', "import { Sink } from '../lib/db/sink.ts';\nimport { chunkText } from '../stages/chunk.ts';"],
    ]),
  );
  assert.equal(layerViolations(wrong), [
    'lib/config.ts -> engine/walk.ts',
    'stages/chunk.ts -> http/walk-registry.ts',
    'mock/server.ts -> engine/fenced-walk.ts',
    'bench/walk.ts -> test/helpers/mock-tier.ts',
    'bench/report.ts -> cli/main.ts',
  ]);
});

test('a package imported outside its facade is caught', () => {
  const wrong = graphOf(
    new Map([
      ['stages/embed.ts', "import type OpenAI from 'openai';"],
      ['lib/embed/client.ts', "import OpenAI from 'openai';"],
    ]),
  );
  assert.equal(facadeViolations(wrong), ['stages/embed.ts imports openai (its facade is lib/embed/client.ts)']);
});

test('a cycle through a type-only import is caught', () => {
  const wrong = graphOf(
    new Map([
      ['stages/upsert.ts', "import type { ItemRows } from '../engine/item-rows.ts';"],
      ['engine/item-rows.ts', "import { keysOf } from '../stages/upsert.ts';"],
      ['lib/ids.ts', "import { v5 } from 'uuid';"],
    ]),
  );
  assert.equal(cycles(wrong), [['engine/item-rows.ts', 'stages/upsert.ts']]);
});

test('every runtime import points down the layers', () => {
  assert.ok(graph.size > 100, `the scan found the runtime modules (${graph.size})`);
  assert.equal(layerViolations(graph), []);
});

test('lmdb, PGlite, pg and the two model SDKs are each imported by their one facade module only', () => {
  assert.equal(facadeViolations(graph), []);
  for (const [pkg, facade] of Object.entries(FACADES))
    assert.ok(graph.get(facade)?.packages.includes(pkg), `${facade} imports ${pkg}`);
});

test('no file-level import cycle', () => {
  assert.equal(cycles(graph), []);
});

/** engine/'s rooms (its folders, and its own files as one more) and the rooms each imports. */
export function roomsOf(graph: Graph): Graph {
  const room = (file: string) => (file.split('/').length > 2 ? path.posix.dirname(file) : 'engine');
  const rooms: Graph = new Map();
  for (const [file, { relative }] of graph) {
    if (layerOf(file) !== 'engine') continue;
    const entry = rooms.get(room(file)) ?? rooms.set(room(file), { relative: [], packages: [] }).get(room(file))!;
    for (const target of relative)
      if (layerOf(target) === 'engine' && room(target) !== room(file) && !entry.relative.includes(room(target)))
        entry.relative.push(room(target));
  }
  return rooms;
}

test("engine/'s rooms point one way: none imports a room that imports it, type-only imports included", () => {
  const rooms = roomsOf(graph);
  assert.ok(rooms.has('engine/walk') && rooms.has('engine/trigger'), `the rooms: ${[...rooms.keys()].join(', ')}`);
  assert.equal(cycles(rooms), []);
  const wrong = roomsOf(
    graphOf(
      new Map([
        ['engine/walk/walk.ts', "import type { FenceHold } from '../trigger/fence.ts';"],
        ['engine/trigger/fenced-walk.ts', "import { walk } from '../walk/walk.ts';"],
      ]),
    ),
  );
  assert.equal(cycles(wrong), [['engine/trigger', 'engine/walk']]);
});

test.run();
