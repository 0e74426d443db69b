// Stage 5 (i), entity resolution, offline on the mock tier: one cold walk of a markdown corpus
// whose alias variants are known (bench/corpus/generate.ts lists every name it placed and the
// true entity behind it), then one unchanged walk, per database engine.
//
//   quality    pairwise precision / recall / F1 of the resolved clusters over the distinct
//              (type, name) names that are ground-truth surfaces: two names are predicted
//              together when they chain under one root, truly together when they name one
//              true entity; roots against true entities met. Mentions the mock extracted
//              outside the ground truth (other capitalised phrases) are counted and left out.
//   blocking   for every variant name (not its entity's canonical spelling): is the root its
//              canonical spelling chained under among the MAX_CANDIDATES candidates the pass
//              offers (the same search and ranking as the pass: rootsNear and rankCandidates in stages/resolve/), run
//              again after the walk against the final roots
//   cost       pair-resolver calls per mention (goal <= 0.05), the pass's model calls, what it
//              adds to the cold walk (its time over the rest of the walk's, goal <= 25 %), the
//              process's resident memory during it; on the unchanged walk its duration (goal
//              < 50 ms), its model calls (goal 0) and the rows it wrote (goal 0)
//
//   names      pairwise precision / recall / F1 on two small sets of short texts (bench/names/):
//              the issue's texts the mock's names and the cross-type candidates were tuned on,
//              and a held-out set written before that tuning, each walked cold on a fresh database
//
//   pace       with --pass-latency-ms L, the cold pass alone asks a second mock server that answers
//              each call after L ms (a real model's pace; the walk before it runs at the mock's
//              speed): its resolver calls per second over the whole pass against the queue's
//              concurrency C (INGEST_MODEL_CONCURRENCY, 8 by default), goal >= 0.9 x C / L
//
//   node bench/resolve.ts [--docs N] [--seed S] [--engines pglite,postgres] [--names-only] [--pass-latency-ms L] [--json FILE]
//
// Engines: pglite, and postgres when ENGINE_DB_DSN is set (scripts/pg-with-vector.sh), unless
// --engines names some of them; each on a fresh database from bench/scratch-database.ts. The mock
// model server runs in this process, as tier 1 does (cli/tier1.ts), so its counters split
// resolver calls from embedding calls; what it spends serving the walk counts as the walk's.

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Lifespan } from '../engine/lifespan.ts';
import { entityResolutionPass, type FlowPass } from '../engine/walk/passes.ts';
import { walk, type WalkSummary } from '../engine/walk/walk.ts';
import type { Database, Queryable } from '../lib/db/database.ts';
import { createEmbeddingClient } from '../lib/embed/client.ts';
import { createLlmClient } from '../lib/llm/client.ts';
import { embedTexts } from '../stages/embed.ts';
import { MAX_CANDIDATES, rankCandidates } from '../stages/resolve/candidates.ts';
import type { ResolutionReport } from '../stages/resolve/index.ts';
import { MIN_COSINE, ROOT, rootOf, rootsNear, type Root } from '../stages/resolve/roots.ts';
import type { Candidate } from '../stages/resolve/pair-resolver.ts';
import type { MockServer } from '../mock/server.ts';
import { startMockServer } from '../mock/server.ts';
import { mockTierEnv, startMockTier } from './mock-tier.ts';
import { buildDocument, relPathOf, trueEntities, type EntityOccurrence } from './corpus/generate.ts';
import { renderDocument } from './corpus/render.ts';
import { enginesToRun, openBenchLifespan, openEngine } from './engines.ts';
import { HELD_OUT } from './names/held-out.ts';
import { scoreNameSet, type SetScore } from './names/score.ts';
import { TUNING } from './names/tuning.ts';
import { printTable, sampleResidentMemory, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '1' },
    engines: { type: 'string' },
    json: { type: 'string' },
    'names-only': { type: 'boolean', default: false },
    'pass-latency-ms': { type: 'string', default: '0' },
  },
});
const DOCS = Number(args.docs);
const SEED = Number(args.seed);
const PASS_LATENCY_MS = Number(args['pass-latency-ms']);

const GOALS = {
  resolverCallsPerMention: 0.05,
  coldPassAdded: 0.25,
  unchangedPassMs: 50,
  /** Of C / L, the resolver calls per second a paced pass keeps up over its whole span. */
  pacedShareOfConcurrency: 0.9,
} as const;

/** How many wrongly merged roots and split entities the report shows. */
const EXAMPLES = 8;

type EntityType = EntityOccurrence['type'];
const nameKey = (type: string, name: string) => `${type}\u0000${name}`;

// ---------------------------------------------------------------------------------------------
// The corpus and its ground truth

interface GroundTruth {
  /** Per document (rel_path): surface -> its occurrence. */
  byDocument: Map<string, Map<string, EntityOccurrence>>;
  /** (type, surface) -> true entity, over the whole corpus. */
  surfaces: Map<string, { type: EntityType; surface: string; entity: string }>;
  occurrences: number;
  /** Surfaces the generator gave to two true entities (0 by construction; checked). */
  ambiguous: number;
}

/** Writes the DOCS markdown documents under `dir`; returns what they hold. */
async function writeCorpus(dir: string): Promise<GroundTruth> {
  const truth: GroundTruth = { byDocument: new Map(), surfaces: new Map(), occurrences: 0, ambiguous: 0 };
  for (let index = 0; index < DOCS; index++) {
    const doc = buildDocument(SEED, index, 'md');
    const relPath = relPathOf(index, 'md');
    await mkdir(path.dirname(path.join(dir, relPath)), { recursive: true });
    await writeFile(path.join(dir, relPath), await renderDocument(doc));
    const surfaces = new Map<string, EntityOccurrence>();
    for (const o of doc.entities) {
      surfaces.set(o.surface, o);
      truth.occurrences += 1;
      const key = nameKey(o.type, o.surface);
      const known = truth.surfaces.get(key);
      if (known !== undefined && known.entity !== o.entity) truth.ambiguous += 1;
      else truth.surfaces.set(key, { type: o.type, surface: o.surface, entity: o.entity });
    }
    truth.byDocument.set(relPath, surfaces);
  }
  return truth;
}

// ---------------------------------------------------------------------------------------------
// The timed pass

interface MockStats {
  messages: number;
  embeddings: number;
  embeddedTexts: number;
}

function mockStats(mock: MockServer): MockStats {
  const { messages, embeddings, embeddedTexts } = mock.stats;
  return { messages, embeddings, embeddedTexts };
}

const minus = (a: MockStats, b: MockStats): MockStats => ({
  messages: a.messages - b.messages,
  embeddings: a.embeddings - b.embeddings,
  embeddedTexts: a.embeddedTexts - b.embeddedTexts,
});

const WATCHED = ['entity_mentions', 'entity_names', 'entity_relationships', 'record_embeddings'] as const;
type Watched = (typeof WATCHED)[number];

interface PassRun {
  ms: number;
  report: ResolutionReport;
  /** Model calls made while the pass ran (nothing else calls the model after the settle barrier). */
  calls: MockStats;
  /** Entity mention rows as extraction left them, before the pass. */
  mentionsBefore: number;
  /** Per table: rows inserted or updated while the pass ran (updated_at after its start), and the row count's change. */
  written: Record<Watched, { touched: number; countChange: number }>;
  /**
   * Where the pass's time went: summed durations of its database calls (queries, transactions)
   * and state-store calls (item memos, pair-resolver memos). Calls can overlap (the resolver's
   * questions run concurrently with the candidate searches), so the sums are upper bounds.
   */
  spent: { database: Spent; stateStore: Spent };
  /** Resident memory of this process when the pass began, and its peak while it ran (sampled), in MB. */
  rssMb: { before: number; peak: number };
  /** The model concurrency C the pass ran at, and the latency L of its model (0: the walk's own mock). */
  pace: { concurrency: number; latencyMs: number };
}

interface Spent {
  ms: number;
  calls: number;
  /** The same, per method. */
  methods: Record<string, { ms: number; calls: number }>;
}

const noneSpent = (): Spent => ({ ms: 0, calls: 0, methods: {} });

/** `target` with every method call timed into `spent`, the asynchronous ones until they settle. */
function timedCalls<T extends object>(target: T, spent: Spent): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const started = performance.now();
        const settle = () => {
          const ms = performance.now() - started;
          const method = (spent.methods[String(property)] ??= { ms: 0, calls: 0 });
          spent.ms += ms;
          spent.calls += 1;
          method.ms += ms;
          method.calls += 1;
        };
        const out: unknown = (value as (...a: unknown[]) => unknown).apply(object, args);
        if (out instanceof Promise) return out.finally(settle);
        settle();
        return out;
      };
    },
  });
}

async function tableCounts(db: Queryable): Promise<Record<Watched, number>> {
  const out = {} as Record<Watched, number>;
  for (const table of WATCHED)
    out[table] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
  return out;
}

async function touchedSince(db: Queryable, since: string): Promise<Record<Watched, number>> {
  const out = {} as Record<Watched, number>;
  for (const table of WATCHED)
    out[table] = (
      await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE updated_at > $1::timestamptz`, [
        since,
      ])
    ).rows[0]!.n;
  return out;
}

/**
 * The lifespan's entity resolution pass (engine/walk/passes.ts, built as engine/lifespan.ts builds it),
 * timed on its own, its report the counts it returns. The row counts and model counters are
 * read before and after, outside the timed span.
 */
function timedResolutionPass(lifespan: () => Lifespan, mock: MockServer, runs: PassRun[]): FlowPass {
  return {
    name: 'entity_resolution',
    async run(context) {
      const { store, config, models } = lifespan();
      const spent = { database: noneSpent(), stateStore: noneSpent() };
      const inner = entityResolutionPass({
        store: timedCalls(store, spent.stateStore),
        model: config.models.extraction,
        queue: models.queue,
        llm: (broken) => createLlmClient(null, broken),
        embedder: (broken) => createEmbeddingClient(null, broken),
        log: context.log,
      });
      const counts = await tableCounts(context.db);
      const [{ now }] = (await context.db.query<{ now: string }>('SELECT now()::text AS now')).rows as [
        { now: string },
      ];
      let rssMb = { before: 0, peak: 0 };
      console.error(`entity resolution pass: ${counts.entity_mentions} mentions`);
      const model = await passModel(mock);
      const calls = mockStats(model.mock);
      const memory = sampleResidentMemory();
      const started = performance.now();
      const report = (await inner
        .run({ ...context, db: timedCalls(context.db, spent.database) })
        .finally(() => (rssMb = memory.stop()))
        .finally(() => model.restore())) as ResolutionReport;
      const ms = performance.now() - started;
      const callsAfter = mockStats(model.mock);
      const countsAfter = await tableCounts(context.db);
      const touched = await touchedSince(context.db, now);
      runs.push({
        ms,
        report,
        calls: minus(callsAfter, calls),
        mentionsBefore: counts.entity_mentions,
        written: Object.fromEntries(
          WATCHED.map((t) => [t, { touched: touched[t], countChange: countsAfter[t] - counts[t] }]),
        ) as PassRun['written'],
        spent,
        rssMb,
        pace: { concurrency: config.walk.modelConcurrency, latencyMs: PASS_LATENCY_MS },
      });
      return report;
    },
  };
}

/**
 * The model the pass asks: the walk's own mock, or with --pass-latency-ms a second one answering
 * after that many ms, the model variables pointed at it until `restore`. The pass builds its
 * clients when it runs, from the environment as it finds it.
 */
async function passModel(walkMock: MockServer): Promise<{ mock: MockServer; restore(): Promise<void> }> {
  if (PASS_LATENCY_MS === 0) return { mock: walkMock, restore: async () => {} };
  const paced = await startMockServer({ latencyMs: PASS_LATENCY_MS });
  const variables = mockTierEnv(paced.url);
  const saved = Object.keys(variables).map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, variables);
  return {
    mock: paced,
    async restore() {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await paced.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Quality against the ground truth

interface NameResult {
  type: EntityType;
  name: string;
  entity: string;
  root: string;
}

interface Quality {
  mentions: number;
  /** Mentions whose surface is a ground-truth surface of their document, with its type. */
  mentionsInTruth: number;
  /** The share of the scored mentions under their true entity's main root (the root holding most of its mentions). */
  mentionsUnderMainRoot: number;
  mentionsOutsideTruth: number;
  outsideExamples: string[];
  /** In the truth by surface, but extracted with another type. */
  mentionsWrongType: number;
  /** Ground-truth occurrences (document, surface) with no mention of that surface in the document. */
  truthSurfacesNotExtracted: number;
  names: number;
  /** Names known only from entity_names: their mentions collapsed into their root's in every document. */
  namesOnlyInEntityNames: number;
  /** Names whose mentions' canonical differs from their entity_names root. */
  namesInconsistent: number;
  variantNames: number;
  pairs: { predicted: number; truth: number; together: number };
  precision: number;
  recall: number;
  f1: number;
  roots: number;
  /** Roots whose name is a variant spelling, not their entity's canonical one. */
  variantSpelledRoots: number;
  trueEntitiesMet: number;
  trueEntitiesInUniverse: number;
  /** Roots holding names of more than one true entity. */
  mergedRoots: { root: string; names: string[] }[];
  /** True entities whose names sit under more than one root. */
  splitEntities: { entity: string; roots: Record<string, string[]> }[];
}

const pairsOf = (n: number) => (n * (n - 1)) / 2;

/** Every entity mention with the corpus path of its document. */
async function mentionsWithPaths(
  db: Queryable,
): Promise<{ rel_path: string; canonical_name: string; surface_form: string; entity_type: string }[]> {
  const { rows } = await db.query<{
    rel_path: string;
    canonical_name: string;
    surface_form: string;
    entity_type: string;
  }>(
    `SELECT d.rel_path, m.canonical_name, m.surface_form, m.entity_type
       FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id`,
  );
  return rows;
}

async function quality(
  db: Queryable,
  truth: GroundTruth,
): Promise<{ quality: Quality; names: Map<string, NameResult> }> {
  const mentions = await mentionsWithPaths(db);
  const names = new Map<string, NameResult>();
  const fromMentions = new Map<string, string>();
  let inTruth = 0;
  let outside = 0;
  let wrongType = 0;
  const outsideExamples = new Set<string>();
  const extracted = new Set<string>();
  /** Per true entity: its scored mentions per root. */
  const mentionRoots = new Map<string, Map<string, number>>();
  for (const m of mentions) {
    const occurrence = truth.byDocument.get(m.rel_path)?.get(m.surface_form);
    if (occurrence === undefined) {
      outside += 1;
      if (outsideExamples.size < EXAMPLES) outsideExamples.add(`${m.entity_type}: ${m.surface_form}`);
      continue;
    }
    extracted.add(`${m.rel_path}\u0000${m.surface_form}`);
    if (occurrence.type !== m.entity_type) {
      wrongType += 1;
      continue;
    }
    inTruth += 1;
    const entityKey = nameKey(occurrence.type, occurrence.entity);
    const roots = mentionRoots.get(entityKey) ?? mentionRoots.set(entityKey, new Map()).get(entityKey)!;
    roots.set(m.canonical_name, (roots.get(m.canonical_name) ?? 0) + 1);
    const key = nameKey(occurrence.type, m.surface_form);
    fromMentions.set(key, m.canonical_name);
    names.set(key, { type: occurrence.type, name: m.surface_form, entity: occurrence.entity, root: m.canonical_name });
  }
  const underMainRoot = [...mentionRoots.values()].reduce((sum, roots) => sum + Math.max(...roots.values()), 0);
  let truthNotExtracted = 0;
  for (const [relPath, surfaces] of truth.byDocument)
    for (const surface of surfaces.keys()) if (!extracted.has(`${relPath}\u0000${surface}`)) truthNotExtracted += 1;

  // entity_names holds every decided name, also those whose every mention collapsed into the
  // mention of their root in the same document (the surface kept is the root's).
  const { rows: decided } = await db.query<{ entity_type: string; name: string; canonical_name: string }>(
    'SELECT entity_type, name, canonical_name FROM entity_names',
  );
  let onlyInNames = 0;
  let inconsistent = 0;
  for (const n of decided) {
    const key = nameKey(n.entity_type, n.name);
    const t = truth.surfaces.get(key);
    if (t === undefined) continue;
    const seen = fromMentions.get(key);
    if (seen === undefined && !names.has(key)) onlyInNames += 1;
    if (seen !== undefined && seen !== n.canonical_name) inconsistent += 1;
    names.set(key, { type: t.type, name: n.name, entity: t.entity, root: n.canonical_name });
  }

  const { pairs, precision, recall, byRoot, byEntity, mergedRoots, splitEntities } = clusters(names);

  return {
    names,
    quality: {
      mentions: mentions.length,
      mentionsInTruth: inTruth,
      mentionsUnderMainRoot: inTruth === 0 ? 1 : underMainRoot / inTruth,
      mentionsOutsideTruth: outside,
      outsideExamples: [...outsideExamples],
      mentionsWrongType: wrongType,
      truthSurfacesNotExtracted: truthNotExtracted,
      names: names.size,
      namesOnlyInEntityNames: onlyInNames,
      namesInconsistent: inconsistent,
      variantNames: [...names.values()].filter((n) => n.name !== n.entity).length,
      pairs,
      precision,
      recall,
      f1: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall),
      roots: byRoot.size,
      variantSpelledRoots: [...names.values()].filter((n) => n.root === n.name && n.name !== n.entity).length,
      trueEntitiesMet: byEntity.size,
      trueEntitiesInUniverse: trueEntities().length,
      mergedRoots,
      splitEntities,
    },
  };
}

/** Pairwise scores over the names: clusters by root and by true entity, their overlaps, and where they differ. */
function clusters(names: ReadonlyMap<string, NameResult>) {
  const count = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);
  const byRoot = new Map<string, number>();
  const byEntity = new Map<string, number>();
  const byBoth = new Map<string, number>();
  for (const n of names.values()) {
    count(byRoot, nameKey(n.type, n.root));
    count(byEntity, nameKey(n.type, n.entity));
    count(byBoth, `${nameKey(n.type, n.root)}\u0001${n.entity}`);
  }
  const sumPairs = (m: Map<string, number>) => [...m.values()].reduce((s, n) => s + pairsOf(n), 0);
  const pairs = { predicted: sumPairs(byRoot), truth: sumPairs(byEntity), together: sumPairs(byBoth) };
  const precision = pairs.predicted === 0 ? 1 : pairs.together / pairs.predicted;
  const recall = pairs.truth === 0 ? 1 : pairs.together / pairs.truth;

  const group = (key: (n: NameResult) => string, sub: (n: NameResult) => string) => {
    const out = new Map<string, Map<string, string[]>>();
    for (const n of names.values()) {
      const inner = out.get(key(n)) ?? out.set(key(n), new Map()).get(key(n))!;
      (inner.get(sub(n)) ?? inner.set(sub(n), []).get(sub(n))!).push(n.name);
    }
    return out;
  };
  const rootEntities = group(
    (n) => `${n.type}: ${n.root}`,
    (n) => n.entity,
  );
  const entityRoots = group(
    (n) => `${n.type}: ${n.entity}`,
    (n) => n.root,
  );
  const mergedRoots = [...rootEntities]
    .filter(([, entities]) => entities.size > 1)
    .map(([root, entities]) => ({ root, names: [...entities].flatMap(([e, ns]) => ns.map((n) => `${n} (${e})`)) }));
  const splitEntities = [...entityRoots]
    .filter(([, roots]) => roots.size > 1)
    .map(([entity, roots]) => ({ entity, roots: Object.fromEntries(roots) }));

  return { pairs, precision, recall, byRoot, byEntity, mergedRoots, splitEntities };
}

// ---------------------------------------------------------------------------------------------
// Blocking recall

interface BlockingGroup {
  names: number;
  /** The true root among the MAX_CANDIDATES best candidates. */
  offered: number;
  /** The true root among everything rootsNear returned, before the cut to MAX_CANDIDATES. */
  blocked: number;
  meanCandidates: number;
  recall: number;
  missed: string[];
}

interface Blocking {
  /** Variants that joined a root (the brief's population). */
  joined: BlockingGroup;
  /** Variants that founded a root of their own while their entity has another (themselves left out of their candidates). */
  founded: BlockingGroup;
  /** Variants whose entity's canonical spelling never occurred: no true root to find. */
  noTrueRoot: number;
  /** Variants that are their entity's root: the canonical spelling joined them. */
  variantRoots: number;
  /** Mean ms of one candidate search (rootsNear and the ranking) after the walk: the pass pays one per name. */
  searchMs: number;
  /** Mean roots per searched variant: in its blocks before any cut, caught by a trigram band, by the embedding block (cosine >= MIN_COSINE, before its cut to the nearest); roots of its type. */
  block: { all: number; trigram: number; vector: number; roots: number };
}

/** The pass's candidate search and ranking, the name itself left out (a variant that founded a root would otherwise find itself), against the final roots only. */
async function candidatesFor(
  db: Database,
  type: string,
  name: string,
  vector: readonly number[],
): Promise<{ ranked: Candidate[]; found: Candidate[]; self: Root }> {
  const self = rootOf({ type, name }, vector);
  const [near] = await rootsNear(db, [self]);
  const found = near!.filter((c) => c.name !== name);
  return { ranked: rankCandidates(self, found), found, self };
}

/** How many roots of the type the blocks hold for a name before any cut, in all and by block. */
async function blockSize(
  db: Queryable,
  self: Root,
): Promise<{ all: number; trigram: number; vector: number; roots: number }> {
  const { rows } = await db.query<{ all: number; trigram: number; vector: number; roots: number }>(
    `WITH r AS (
       SELECT n.normalised = $3 AS exact,
              EXISTS (SELECT 1 FROM entity_root_bands b
                       WHERE b.entity_type = n.entity_type AND b.name = n.name AND b.band = ANY($4::text[])) AS trigram,
              n.embedding <=> $5::vector <= $6 AS vector
         FROM entity_names n WHERE n.entity_type = $1 AND ${ROOT('n')} AND n.name <> $2)
     SELECT count(*) FILTER (WHERE exact OR trigram OR vector)::int AS all, count(*) FILTER (WHERE trigram)::int AS trigram,
            count(*) FILTER (WHERE vector)::int AS vector, count(*)::int AS roots
       FROM r`,
    [self.type, self.name, self.normalised, self.bands, `[${self.vector.join(',')}]`, 1 - MIN_COSINE],
  );
  return rows[0]!;
}

async function blocking(db: Database, lifespan: Lifespan, names: Map<string, NameResult>): Promise<Blocking> {
  const variants = [...names.values()].filter((n) => n.name !== n.entity);
  const vectors = await embedTexts(
    variants.map((v) => v.name),
    { client: createEmbeddingClient(), queue: lifespan.models.queue },
  );
  const groups = {
    joined: { names: 0, offered: 0, blocked: 0, candidates: 0, missed: [] as string[] },
    founded: { names: 0, offered: 0, blocked: 0, candidates: 0, missed: [] as string[] },
  };
  let noTrueRoot = 0;
  let variantRoots = 0;
  let searchMs = 0;
  const block = { all: 0, trigram: 0, vector: 0, roots: 0, n: 0 };
  for (const [i, v] of variants.entries()) {
    const trueRoot = names.get(nameKey(v.type, v.entity))?.root;
    if (trueRoot === undefined) {
      noTrueRoot += 1;
      continue;
    }
    // Decided before its canonical spelling, which then joined it: nothing to look for.
    if (trueRoot === v.name) {
      variantRoots += 1;
      continue;
    }
    const group = v.root === v.name ? groups.founded : groups.joined;
    const started = performance.now();
    const { ranked, found, self } = await candidatesFor(db, v.type, v.name, vectors[i]!);
    searchMs += performance.now() - started;
    const size = await blockSize(db, self);
    block.all += size.all;
    block.trigram += size.trigram;
    block.vector += size.vector;
    block.roots += size.roots;
    block.n += 1;
    group.names += 1;
    group.candidates += ranked.length;
    if (found.some((c) => c.name === trueRoot)) group.blocked += 1;
    if (ranked.some((c) => c.name === trueRoot)) group.offered += 1;
    else if (group.missed.length < EXAMPLES)
      group.missed.push(`${v.name} -> ${trueRoot} [${ranked.map((c) => c.name).join(', ')}]`);
  }
  const finish = (g: (typeof groups)['joined']): BlockingGroup => ({
    names: g.names,
    offered: g.offered,
    blocked: g.blocked,
    meanCandidates: g.names === 0 ? 0 : g.candidates / g.names,
    recall: g.names === 0 ? 1 : g.offered / g.names,
    missed: g.missed,
  });
  const searched = groups.joined.names + groups.founded.names;
  return {
    joined: finish(groups.joined),
    founded: finish(groups.founded),
    noTrueRoot,
    variantRoots,
    searchMs: searched === 0 ? 0 : searchMs / searched,
    block: {
      all: block.all / Math.max(1, block.n),
      trigram: block.trigram / Math.max(1, block.n),
      vector: block.vector / Math.max(1, block.n),
      roots: block.roots / Math.max(1, block.n),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One engine

interface WalkFigures {
  durationMs: number;
  changed: number;
  unchanged: number;
  failed: number;
  /** Model calls over the whole walk. */
  calls: MockStats;
  rows: number;
  pass: PassRun;
}

interface EngineResult {
  engine: string;
  cold: WalkFigures;
  unchanged: WalkFigures;
  quality: Quality;
  blocking: Blocking;
  cost: {
    resolverCallsPerMention: number;
    /** What the pass adds to the cold walk: its time over the rest of the walk's. */
    coldPassAdded: number;
  };
}

async function runEngine(engine: string, corpus: string, truth: GroundTruth, mock: MockServer): Promise<EngineResult> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-resolve-'));
  const target = await openEngine(engine);
  const runs: PassRun[] = [];
  let lifespan: Lifespan | undefined;
  try {
    lifespan = await openBenchLifespan(root, target.db, [timedResolutionPass(() => lifespan!, mock, runs)]);
    const once = async (): Promise<WalkFigures> => {
      const before = mockStats(mock);
      const summary: WalkSummary = await walk(lifespan!, { sourcePath: corpus });
      if (summary.status !== 'completed') throw new Error(`${engine}: walk ${summary.status}: ${summary.error}`);
      const failedPasses = summary.passes.filter((p) => !p.ok);
      if (failedPasses.length > 0) throw new Error(`${engine}: passes failed: ${JSON.stringify(failedPasses)}`);
      return {
        durationMs: summary.durationMs,
        changed: summary.items.changed,
        unchanged: summary.items.unchanged,
        failed: summary.items.failed,
        calls: minus(mockStats(mock), before),
        rows: Object.values(summary.rows).reduce((a, b) => a + b, 0),
        pass: runs.at(-1)!,
      };
    };
    const progress = (what: string) => console.error(`${engine}: ${what}`);
    progress('cold walk');
    const cold = await once();
    progress(`cold walk ${fmt(cold.durationMs / 1000, 1)} s, its pass ${fmt(cold.pass.ms / 1000, 1)} s; scoring`);
    const { quality: q, names } = await quality(target.db, truth);
    const b = await blocking(target.db, lifespan, names);
    progress('unchanged walk');
    const unchanged = await once();
    return {
      engine,
      cold,
      unchanged,
      quality: q,
      blocking: b,
      cost: {
        resolverCallsPerMention: cold.pass.calls.messages / Math.max(1, cold.pass.mentionsBefore),
        coldPassAdded: cold.pass.ms / (cold.durationMs - cold.pass.ms),
      },
    };
  } finally {
    await lifespan?.close();
    await target.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const fmt = (x: number, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const yes = (ok: boolean) => (ok ? 'yes' : 'NO');

/** One engine's figures against their goals, a row each. */
function figures(r: EngineResult): string[][] {
  const { quality: q, blocking: b, cold, unchanged } = r;
  const rowsWritten = (p: PassRun) => Object.values(p.written).reduce((s, w) => s + w.touched, 0);
  const countChanges = (p: PassRun) => Object.values(p.written).reduce((s, w) => s + Math.abs(w.countChange), 0);
  return [
    ['pairwise precision', fmt(q.precision), '', ''],
    ['pairwise recall', fmt(q.recall), '', ''],
    ['pairwise F1', fmt(q.f1), '', ''],
    ["mentions under their entity's main root", fmt(q.mentionsUnderMainRoot), '', ''],
    [
      'names scored (variants) / pairs predicted, true, shared',
      `${q.names} (${q.variantNames}) / ${q.pairs.predicted}, ${q.pairs.truth}, ${q.pairs.together}`,
      '',
      '',
    ],
    [
      'roots (of them variant spellings) / true entities met',
      `${q.roots} (${q.variantSpelledRoots}) / ${q.trueEntitiesMet}`,
      '',
      '',
    ],
    [
      'blocking recall, variants that joined a root',
      `${fmt(b.joined.recall)} (${b.joined.offered} of ${b.joined.names})`,
      '',
      '',
    ],
    [
      'blocking recall, variants that founded a root',
      `${fmt(b.founded.recall)} (${b.founded.offered} of ${b.founded.names})`,
      '',
      '',
    ],
    [
      'mean candidates per variant (joined / founded)',
      `${fmt(b.joined.meanCandidates, 2)} / ${fmt(b.founded.meanCandidates, 2)}`,
      `<= ${MAX_CANDIDATES}`,
      '',
    ],
    [
      'cold: pair-resolver calls per mention',
      `${fmt(r.cost.resolverCallsPerMention, 4)} (${cold.pass.calls.messages} / ${cold.pass.mentionsBefore})`,
      `<= ${GOALS.resolverCallsPerMention}`,
      yes(r.cost.resolverCallsPerMention <= GOALS.resolverCallsPerMention),
    ],
    [
      'cold: pass names: exact / resolver / founded (resolver asked)',
      `${cold.pass.report.joined_exact} / ${cold.pass.report.joined_by_resolver} / ${cold.pass.report.founded} (${cold.pass.report.resolver_asked})`,
      '',
      '',
    ],
    [
      'cold: pass embedding requests (texts)',
      `${cold.pass.calls.embeddings} (${cold.pass.calls.embeddedTexts})`,
      '',
      '',
    ],
    ...pacedFigure(cold.pass),
    [
      'cold: pass ms / what it adds to the rest of the walk',
      `${fmt(cold.pass.ms, 0)} / +${pct(r.cost.coldPassAdded)}`,
      `<= +${pct(GOALS.coldPassAdded)}`,
      yes(r.cost.coldPassAdded <= GOALS.coldPassAdded),
    ],
    [
      'cold: resident memory when the pass began / its peak during the pass (MB)',
      `${cold.pass.rssMb.before} / ${cold.pass.rssMb.peak}`,
      '',
      '',
    ],
    [
      'cold: pass ms in database calls / state-store calls (sums, may overlap)',
      `${fmt(cold.pass.spent.database.ms, 0)} (${cold.pass.spent.database.calls}) / ${fmt(cold.pass.spent.stateStore.ms, 0)} (${cold.pass.spent.stateStore.calls})`,
      '',
      '',
    ],
    [
      'unchanged: pass ms',
      fmt(unchanged.pass.ms, 1),
      `< ${GOALS.unchangedPassMs}`,
      yes(unchanged.pass.ms < GOALS.unchangedPassMs),
    ],
    [
      'unchanged: pass model calls (messages + embeddings)',
      String(unchanged.pass.calls.messages + unchanged.pass.calls.embeddings),
      '0',
      yes(unchanged.pass.calls.messages + unchanged.pass.calls.embeddings === 0),
    ],
    [
      'unchanged: pass rows written / row count changes',
      `${rowsWritten(unchanged.pass)} / ${countChanges(unchanged.pass)}`,
      '0 / 0',
      yes(rowsWritten(unchanged.pass) === 0 && countChanges(unchanged.pass) === 0),
    ],
    [
      'unchanged: whole walk model calls / rows',
      `${unchanged.calls.messages + unchanged.calls.embeddings} / ${unchanged.rows}`,
      '0 / 0',
      yes(unchanged.calls.messages + unchanged.calls.embeddings === 0 && unchanged.rows === 0),
    ],
  ];
}

/** With --pass-latency-ms: the cold pass's resolver calls per second against 0.9 x C / L. */
function pacedFigure(pass: PassRun): string[][] {
  const { concurrency, latencyMs } = pass.pace;
  if (latencyMs === 0) return [];
  const perSecond = pass.calls.messages / (pass.ms / 1000);
  const goal = (GOALS.pacedShareOfConcurrency * concurrency) / (latencyMs / 1000);
  return [
    [
      `cold: resolver calls/s over the pass at L ${latencyMs} ms, C ${concurrency} (of C / L)`,
      `${fmt(perSecond, 1)} (${fmt(perSecond / (concurrency / (latencyMs / 1000)), 2)})`,
      `>= ${fmt(goal, 1)}`,
      yes(perSecond >= goal),
    ],
  ];
}

function report(results: EngineResult[]): void {
  for (const r of results) {
    const { quality: q, blocking: b, cold, unchanged } = r;
    console.log(
      `\n${r.engine}: entity resolution on ${DOCS} markdown documents (seed ${SEED}), mock tier; cold walk ${fmt(cold.durationMs / 1000, 1)} s (${cold.changed} changed, ${cold.failed} failed), unchanged walk ${fmt(unchanged.durationMs / 1000, 2)} s (${unchanged.unchanged} unchanged)`,
    );
    printTable(['figure', 'value', 'goal', 'met?'], figures(r));
    console.log(
      `Mentions: ${q.mentions} after the cold walk (${cold.pass.mentionsBefore} before its pass); ${q.mentionsInTruth} scored, ` +
        `${q.mentionsOutsideTruth} outside the ground truth (left out; e.g. ${q.outsideExamples.slice(0, 4).join('; ') || '-'}), ` +
        `${q.mentionsWrongType} of a ground-truth surface with another type (left out). ` +
        `${q.truthSurfacesNotExtracted} ground-truth (document, surface) pairs have no mention of that surface; ` +
        `the pass collapsed ${cold.pass.mentionsBefore - q.mentions} mentions into their root's mention in the same document. ` +
        `${q.namesOnlyInEntityNames} scored names are known from entity_names alone; ` +
        `${q.namesInconsistent} names have mentions under another root than entity_names says. ` +
        `True entities in the generator's universe: ${q.trueEntitiesInUniverse}.`,
    );
    console.log(
      `Blocking recall is measured after the walk against the final roots, not the roots as they stood when each ` +
        `name was decided (later roots may crowd a candidate list, and the batch's own new roots are among them). ` +
        `The true root was blocked (among what rootsNear returned) for ${b.joined.blocked} of ${b.joined.names} joined and ` +
        `${b.founded.blocked} of ${b.founded.names} founded variants; one search took ${fmt(b.searchMs, 2)} ms on average. ` +
        `A variant's block held ${fmt(b.block.all, 1)} roots on average (${fmt(b.block.trigram, 1)} by a trigram band, ` +
        `${fmt(b.block.vector, 1)} at cosine >= ${MIN_COSINE}) of ${fmt(b.block.roots, 1)} roots of its type. Not counted: ${b.variantRoots} variants that are ` +
        `their entity's root (decided first; its canonical spelling joined them), ${b.noTrueRoot} whose canonical spelling never occurred.`,
    );
    const byMethod = (spent: Spent) =>
      Object.entries(spent.methods)
        .sort((x, y) => y[1].ms - x[1].ms)
        .map(([name, m]) => `${name} ${fmt(m.ms, 0)} ms / ${m.calls}`)
        .join(', ');
    console.log(
      `Cold pass, time in calls by method: database ${byMethod(cold.pass.spent.database)}; ` +
        `state store ${byMethod(cold.pass.spent.stateStore)}.`,
    );
    if (b.joined.missed.length + b.founded.missed.length > 0) {
      console.log('Variants whose true root was not offered (name -> true root [candidates]):');
      for (const m of [...b.joined.missed, ...b.founded.missed]) console.log(`  ${m}`);
    }
    if (q.mergedRoots.length > 0) {
      console.log(`Roots holding names of more than one true entity (${q.mergedRoots.length}):`);
      for (const m of q.mergedRoots.slice(0, EXAMPLES)) console.log(`  ${m.root}: ${m.names.join(', ')}`);
    }
    if (q.splitEntities.length > 0) {
      console.log(`True entities split over several roots (${q.splitEntities.length}):`);
      for (const s of q.splitEntities.slice(0, EXAMPLES))
        console.log(
          `  ${s.entity}: ${Object.entries(s.roots)
            .map(([root, ns]) => `${root} <- ${ns.join(', ')}`)
            .join(' | ')}`,
        );
    }
  }
}

// ---------------------------------------------------------------------------------------------

const engines = enginesToRun('resolve', args.engines);

function reportNames(scores: SetScore[]): void {
  console.log('\nNames: the tuning texts and the held-out set, each walked cold on the mock tier');
  printTable(
    ['engine', 'set', 'occurrences', 'pairs predicted, true, shared', 'precision', 'recall', 'F1'],
    scores.map((s) => [
      s.engine,
      s.set,
      String(s.occurrences),
      `${s.pairs.predicted}, ${s.pairs.truth}, ${s.pairs.together}`,
      fmt(s.precision),
      fmt(s.recall),
      fmt(s.f1),
    ]),
  );
  for (const s of scores.filter((x) => x.engine === scores[0]!.engine)) {
    console.log(`${s.set} clusters (${s.engine}):`);
    for (const c of s.clusters) console.log(`  ${c}`);
  }
}

const nameScores: SetScore[] = [];
const results: EngineResult[] = [];
const scratch = mkdtempSync(path.join(tmpdir(), 'ingest-bench-resolve-corpus-'));
try {
  const tier = await startMockTier();
  try {
    for (const engine of engines)
      for (const set of [TUNING, HELD_OUT]) nameScores.push(await scoreNameSet(engine, set));
    if (!args['names-only']) {
      const corpus = path.join(scratch, 'corpus');
      const truth = await writeCorpus(corpus);
      if (truth.ambiguous > 0) console.warn(`warning: ${truth.ambiguous} surfaces name two true entities`);
      for (const engine of engines) results.push(await runEngine(engine, corpus, truth, tier.mock));
    }
  } finally {
    await tier.stop();
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
reportNames(nameScores);
report(results);
await writeJson(args.json, 'resolve', {
  docs: DOCS,
  seed: SEED,
  passLatencyMs: PASS_LATENCY_MS,
  maxCandidates: MAX_CANDIDATES,
  goals: GOALS,
  names: nameScores,
  results,
});
