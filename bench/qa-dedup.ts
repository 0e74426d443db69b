// Stage 5 (ii), the Q&A dedup proposer, offline on the mock tier: one cold walk of a markdown
// corpus carrying repeated FAQ entries whose truth is known (bench/corpus/generate.ts,
// repeatedQa: the same entry word for word, with its question reworded, or with its answer
// changed), then one unchanged walk, per database engine.
//
//   quality   precision and recall of the proposals the pass wrote, at MIN_SIMILARITY, over
//             pairs of answered Q&A rows in different documents: truly duplicates when they are
//             the same FAQ entry with the same answer (worded alike or not), or the same text;
//             recall split by exact repeats and reworded questions, false proposals by changed
//             answers (the same entry, another answer) and the rest. Then the same figures
//             for other thresholds, from the pass's own candidate search (findCandidates) run
//             again at the lowest of them: what tuning the threshold would give
//   cost      the cold pass's time and its share of the cold walk; the unchanged walk's pass
//             (goal < 50 ms, 0 proposals, 0 writes), and the median of 20 more such passes
//
//   node bench/qa-dedup.ts [--docs N] [--seed S] [--engines pglite,postgres]
//                          [--thresholds 0.7,0.75,...] [--light] [--json FILE]
//
// --light cuts every document to its first paragraph and its Q&A entries: the pass sees the
// same pairs (the generator draws the whole document first), the walk does a fraction of the
// work, so the pass can be measured at 100,000 documents within a working session.
//
// Tune on one seed, report the threshold's figures on another (bench/README.md).

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Lifespan } from '../engine/lifespan.ts';
import { qaDedupPass, type FlowPass } from '../engine/walk/passes.ts';
import { walk } from '../engine/walk/walk.ts';
import type { Database, Queryable } from '../lib/db/database.ts';
import { findCandidates } from '../stages/qa-dedup/candidates.ts';
import { BATCH_PAIRS, MIN_SIMILARITY, proposeQaDuplicates, type QaDedupReport } from '../stages/qa-dedup/index.ts';
import { startMockTier } from './mock-tier.ts';
import { buildDocument, relPathOf, type QaPair } from './corpus/generate.ts';
import { renderDocument } from './corpus/render.ts';
import { enginesToRun, openBenchLifespan, openEngine } from './engines.ts';
import { median, printTable, sampleResidentMemory, writeJson } from './report.ts';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '1000' },
    light: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1' },
    engines: { type: 'string' },
    thresholds: { type: 'string', default: '0.6,0.65,0.7,0.75,0.8,0.85,0.9' },
    json: { type: 'string' },
  },
});
const DOCS = Number(args.docs);
/** Documents cut to their first paragraph and their Q&A: the same pairs, a fraction of the walk. */
const LIGHT = args.light;
const SEED = Number(args.seed);
const THRESHOLDS = [...new Set([...args.thresholds.split(',').map(Number), MIN_SIMILARITY])].sort((a, b) => a - b);
const GOALS = { unchangedPassMs: 50 } as const;
const EXTRA_UNCHANGED_PASSES = 20;

// ---------------------------------------------------------------------------------------------
// The corpus and its truth

/** Per document (rel_path): its Q&A pairs in order, so idx -> pair. */
type Truth = Map<string, QaPair[]>;

async function writeCorpus(dir: string): Promise<Truth> {
  const truth: Truth = new Map();
  for (let index = 0; index < DOCS; index++) {
    const built = buildDocument(SEED, index, 'md', { repeatedQa: true });
    const doc = LIGHT
      ? { ...built, sections: built.sections.slice(0, 1).map((s) => ({ ...s, paragraphs: s.paragraphs.slice(0, 1) })) }
      : built;
    const relPath = relPathOf(index, 'md');
    await mkdir(path.dirname(path.join(dir, relPath)), { recursive: true });
    await writeFile(path.join(dir, relPath), await renderDocument(doc));
    truth.set(relPath, doc.qa);
  }
  return truth;
}

const plain = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

interface Row {
  id: string;
  doc: string;
  pair: QaPair;
}

/** What makes two rows duplicates: the same FAQ entry and answer, or (pairs of the documents' own) the same text. */
const truthKey = (p: QaPair) =>
  p.repeat !== undefined
    ? `faq:${p.repeat.family}:${p.repeat.answer}`
    : `text:${plain(p.question)}\n${plain(p.answer ?? '')}`;

const pairKey = (x: string, y: string) => (x < y ? `${x}|${y}` : `${y}|${x}`);

async function answeredRows(db: Queryable, truth: Truth): Promise<Map<string, Row>> {
  const { rows } = await db.query<{ id: string; rel_path: string; idx: number; doc: string }>(
    `SELECT q.id::text, d.rel_path, q.idx, d.id::text AS doc FROM q_a_extractions q
       JOIN source_documents d ON d.id = q.source_document_id WHERE q_a_is_answered(q.answer_text)`,
  );
  const out = new Map<string, Row>();
  for (const r of rows) {
    const pair = truth.get(r.rel_path)?.[r.idx];
    if (pair === undefined) throw new Error(`no truth for ${r.rel_path} idx ${r.idx}`);
    out.set(r.id, { id: r.id, doc: r.doc, pair });
  }
  return out;
}

/** Every true duplicate pair (different documents), with whether the two are worded alike. */
function truePairs(rows: Map<string, Row>): Map<string, 'exact' | 'reworded'> {
  const groups = new Map<string, Row[]>();
  for (const r of rows.values()) {
    const key = truthKey(r.pair);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const out = new Map<string, 'exact' | 'reworded'>();
  for (const group of groups.values())
    for (let i = 0; i < group.length; i++)
      for (let j = i + 1; j < group.length; j++) {
        const [x, y] = [group[i]!, group[j]!];
        if (x.doc === y.doc) continue;
        const alike = plain(x.pair.question) === plain(y.pair.question);
        out.set(pairKey(x.id, y.id), alike ? 'exact' : 'reworded');
      }
  return out;
}

interface Score {
  threshold: number;
  proposed: number;
  correct: number;
  precision: number;
  recall: number;
  recallExact: number;
  recallReworded: number;
  /** False proposals of the same FAQ entry with another answer. */
  falseChangedAnswer: number;
  falseOther: number;
  /** A few false proposals, as "Q: ... A: ... ~ Q: ... A: ...". */
  falseExamples: string[];
}

const EXAMPLES = 4;
const shown = (p: QaPair | undefined) => (p === undefined ? '?' : `Q: ${p.question} A: ${p.answer}`);

function score(
  threshold: number,
  predicted: Iterable<string>,
  truth: Map<string, 'exact' | 'reworded'>,
  rows: Map<string, Row>,
): Score {
  let proposed = 0;
  let correct = 0;
  let exact = 0;
  let reworded = 0;
  let falseChangedAnswer = 0;
  let falseOther = 0;
  const falseExamples: string[] = [];
  for (const key of predicted) {
    proposed += 1;
    const kind = truth.get(key);
    if (kind !== undefined) {
      correct += 1;
      if (kind === 'exact') exact += 1;
      else reworded += 1;
      continue;
    }
    const [x, y] = key.split('|').map((id) => rows.get(id)?.pair);
    if (falseExamples.length < EXAMPLES) falseExamples.push(`${shown(x)}  ~  ${shown(y)}`);
    if (x?.repeat !== undefined && y?.repeat !== undefined && x.repeat.family === y.repeat.family)
      falseChangedAnswer += 1;
    else falseOther += 1;
  }
  const kinds = [...truth.values()];
  const ofKind = (k: string) => kinds.filter((v) => v === k).length;
  return {
    threshold,
    proposed,
    correct,
    precision: proposed === 0 ? 1 : correct / proposed,
    recall: truth.size === 0 ? 1 : correct / truth.size,
    recallExact: exact / Math.max(1, ofKind('exact')),
    recallReworded: reworded / Math.max(1, ofKind('reworded')),
    falseChangedAnswer,
    falseOther,
    falseExamples,
  };
}

/** The pass's candidate search over every answered row at `lowest`: each pair's similarity. */
async function candidateSimilarities(
  db: Database,
  ids: readonly string[],
  lowest: number,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < ids.length; i += BATCH_PAIRS) {
    for (const p of await findCandidates(db, ids.slice(i, i + BATCH_PAIRS), lowest))
      out.set(pairKey(p.a, p.b), Math.max(out.get(pairKey(p.a, p.b)) ?? 0, p.similarity));
  }
  return out;
}

async function sweepThresholds(
  db: Database,
  ids: readonly string[],
  truth: Map<string, 'exact' | 'reworded'>,
  rows: Map<string, Row>,
): Promise<Score[]> {
  const similarities = await candidateSimilarities(db, ids, THRESHOLDS[0]!);
  return THRESHOLDS.map((t) =>
    score(
      t,
      [...similarities].filter(([, s]) => s >= t).map(([k]) => k),
      truth,
      rows,
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// One engine

interface PassRun {
  ms: number;
  report: QaDedupReport;
  /** Proposal rows inserted or updated while it ran, and q_a_dedup_ops rows added or removed. */
  written: { proposals: number; ledger: number };
  /** Resident memory of this process when the pass began, and its peak while it ran (sampled), in MB. */
  rssMb: { before: number; peak: number };
}

function timedPass(runs: PassRun[]): FlowPass {
  const inner = qaDedupPass();
  return {
    name: inner.name,
    async run(context) {
      const ledger = () => count(context.db, 'SELECT count(*)::int AS n FROM q_a_dedup_ops');
      const { rows } = await context.db.query<{ now: string }>('SELECT clock_timestamp()::text AS now');
      const ledgerBefore = await ledger();
      const memory = sampleResidentMemory();
      const started = performance.now();
      const report = (await inner.run(context)) as QaDedupReport;
      const ms = performance.now() - started;
      const rssMb = memory.stop();
      const proposals = await count(
        context.db,
        `SELECT count(*)::int AS n FROM q_a_dedup_proposals WHERE updated_at >= '${rows[0]!.now}'::timestamptz`,
      );
      runs.push({ ms, report, written: { proposals, ledger: Math.abs((await ledger()) - ledgerBefore) }, rssMb });
      return report;
    },
  };
}

async function count(db: Queryable, sql: string): Promise<number> {
  return (await db.query<{ n: number }>(sql)).rows[0]!.n;
}

interface EngineResult {
  engine: string;
  cold: { walkMs: number; changed: number; failed: number; pass: PassRun };
  unchanged: { walkMs: number; unchanged: number; pass: PassRun; medianOfMoreMs: number };
  answeredPairs: number;
  truePairs: { all: number; exact: number; reworded: number };
  atThreshold: Score;
  sweep: Score[];
}

async function runEngine(engine: string, corpus: string, truth: Truth): Promise<EngineResult> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-qa-dedup-'));
  const target = await openEngine(engine);
  const runs: PassRun[] = [];
  let lifespan: Lifespan | undefined;
  const progress = (what: string) => console.error(`${engine}: ${what}`);
  try {
    // The Q&A dedup pass alone: entity resolution is bench/resolve.ts's subject.
    lifespan = await openBenchLifespan(root, target.db, [timedPass(runs)]);
    progress('cold walk');
    const cold = await walk(lifespan, { sourcePath: corpus });
    if (cold.status !== 'completed' || cold.passes.some((p) => !p.ok))
      throw new Error(`${engine}: cold walk ${cold.status}: ${cold.error ?? JSON.stringify(cold.passes)}`);
    const coldPass = runs.at(-1)!;
    progress(
      `cold walk ${(cold.durationMs / 1000).toFixed(1)} s, its pass ${(coldPass.ms / 1000).toFixed(2)} s, ` +
        `resident ${coldPass.rssMb.before} MB at its start, ${coldPass.rssMb.peak} MB at its peak; scoring`,
    );
    const rows = await answeredRows(target.db, truth);
    const truthPairs = truePairs(rows);
    const { rows: written } = await target.db.query<{ a: string; b: string }>(
      `SELECT q_a_extraction_a::text AS a, q_a_extraction_b::text AS b FROM q_a_dedup_proposals`,
    );
    const atThreshold = score(
      MIN_SIMILARITY,
      written.map((p) => pairKey(p.a, p.b)),
      truthPairs,
      rows,
    );
    // A sweep of the pass's threshold alone would repeat the cold pass's search for its own figures.
    const sweep =
      THRESHOLDS.length === 1 ? [atThreshold] : await sweepThresholds(target.db, [...rows.keys()], truthPairs, rows);
    progress('unchanged walk');
    const unchanged = await walk(lifespan, { sourcePath: corpus });
    const unchangedPass = runs.at(-1)!;
    const more: number[] = [];
    for (let i = 0; i < EXTRA_UNCHANGED_PASSES; i++) {
      const started = performance.now();
      const report = await proposeQaDuplicates(target.db, randomUUID(), null);
      more.push(performance.now() - started);
      if (report.pairs !== 0) throw new Error(`${engine}: an unchanged pass examined ${report.pairs} pairs`);
    }
    const kinds = [...truthPairs.values()];
    return {
      engine,
      cold: { walkMs: cold.durationMs, changed: cold.items.changed, failed: cold.items.failed, pass: coldPass },
      unchanged: {
        walkMs: unchanged.durationMs,
        unchanged: unchanged.items.unchanged,
        pass: unchangedPass,
        medianOfMoreMs: median(more),
      },
      answeredPairs: rows.size,
      truePairs: {
        all: truthPairs.size,
        exact: kinds.filter((k) => k === 'exact').length,
        reworded: kinds.filter((k) => k === 'reworded').length,
      },
      atThreshold,
      sweep,
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

function report(results: EngineResult[]): void {
  for (const r of results) {
    const { cold, unchanged, atThreshold: s } = r;
    console.log(
      `\n${r.engine}: Q&A dedup on ${DOCS} markdown documents${LIGHT ? ' (light)' : ''} (seed ${SEED}), mock tier; cold walk ` +
        `${fmt(cold.walkMs / 1000, 1)} s (${cold.changed} changed, ${cold.failed} failed), unchanged walk ` +
        `${fmt(unchanged.walkMs / 1000, 2)} s (${unchanged.unchanged} unchanged); ${r.answeredPairs} answered pairs, ` +
        `${r.truePairs.all} true duplicate pairs (${r.truePairs.exact} worded alike, ${r.truePairs.reworded} reworded)`,
    );
    printTable(
      ['figure', 'value', 'goal', 'met?'],
      [
        [`precision at ${MIN_SIMILARITY}`, fmt(s.precision), '', ''],
        [
          `recall at ${MIN_SIMILARITY} (worded alike / reworded)`,
          `${fmt(s.recall)} (${fmt(s.recallExact)} / ${fmt(s.recallReworded)})`,
          '',
          '',
        ],
        [
          'proposals: correct / false (changed answer, other)',
          `${s.proposed}: ${s.correct} / ${s.proposed - s.correct} (${s.falseChangedAnswer}, ${s.falseOther})`,
          '',
          '',
        ],
        [
          'cold pass: ms, share of the cold walk',
          `${fmt(cold.pass.ms, 0)}, ${fmt((100 * cold.pass.ms) / cold.walkMs, 1)} %`,
          '',
          '',
        ],
        ['cold pass: resident MB at its start / peak', `${cold.pass.rssMb.before} / ${cold.pass.rssMb.peak}`, '', ''],
        [
          'unchanged pass: ms (median of 20 more)',
          `${fmt(unchanged.pass.ms, 1)} (${fmt(unchanged.medianOfMoreMs, 1)})`,
          `< ${GOALS.unchangedPassMs}`,
          unchanged.pass.ms < GOALS.unchangedPassMs ? 'yes' : 'NO',
        ],
        [
          'unchanged pass: pairs, proposals, rows written',
          `${unchanged.pass.report.pairs}, ${unchanged.pass.report.proposed}, ${unchanged.pass.written.proposals + unchanged.pass.written.ledger}`,
          '0, 0, 0',
          unchanged.pass.report.pairs + unchanged.pass.written.proposals + unchanged.pass.written.ledger === 0
            ? 'yes'
            : 'NO',
        ],
      ],
    );
    if (s.falseExamples.length > 0) {
      console.log(`\nFalse proposals at ${MIN_SIMILARITY} (the first ${s.falseExamples.length}):`);
      for (const e of s.falseExamples) console.log(`  ${e}`);
    }
    console.log('\nThe same candidate search at other thresholds:');
    printTable(
      ['threshold', 'proposed', 'precision', 'recall', 'alike / reworded', 'false: changed answer / other'],
      r.sweep.map((t) => [
        fmt(t.threshold, 2),
        String(t.proposed),
        fmt(t.precision),
        fmt(t.recall),
        `${fmt(t.recallExact)} / ${fmt(t.recallReworded)}`,
        `${t.falseChangedAnswer} / ${t.falseOther}`,
      ]),
    );
  }
}

// ---------------------------------------------------------------------------------------------

const engines = enginesToRun('qa-dedup', args.engines);
const scratch = mkdtempSync(path.join(tmpdir(), 'ingest-bench-qa-dedup-corpus-'));
const results: EngineResult[] = [];
try {
  const corpus = path.join(scratch, 'corpus');
  const truth = await writeCorpus(corpus);
  // Tier 1 in this process, as cli/tier1.ts runs it.
  const tier = await startMockTier();
  try {
    for (const engine of engines) results.push(await runEngine(engine, corpus, truth));
  } finally {
    await tier.stop();
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
report(results);
await writeJson(args.json, 'qa-dedup', {
  docs: DOCS,
  light: LIGHT,
  seed: SEED,
  minSimilarity: MIN_SIMILARITY,
  goals: GOALS,
  results,
});
