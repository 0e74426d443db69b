// The names benchmark of bench/resolve.ts: a set of short texts (set.ts) walked on one engine,
// cold, on the mock tier already running in this process, and its mentions scored against the
// entities the texts name. Pairwise over the names' occurrences: two occurrences are predicted
// together when their mentions sit under one (type, canonical name), truly together when they
// name one entity. An occurrence is found by the mention of its document whose surface is the
// name, or else the shortest that contains it ("March Ada Lovelace" for "Ada Lovelace"); one
// with no such mention is predicted apart from every other.

import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { walk } from '../../engine/walk/walk.ts';
import { openBenchLifespan, openEngine } from '../engines.ts';
import type { NameSet } from './set.ts';

export interface SetScore {
  set: string;
  engine: string;
  occurrences: number;
  pairs: { predicted: number; truth: number; together: number };
  precision: number;
  recall: number;
  f1: number;
  /** Each predicted cluster: "type: canonical <- file surface, ...". */
  clusters: string[];
}

interface Found {
  rel_path: string;
  surface_form: string;
  canonical_name: string;
  entity_type: string;
}

export async function scoreNameSet(engine: string, set: NameSet): Promise<SetScore> {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-bench-names-'));
  const target = await openEngine(engine);
  const lifespan = await openBenchLifespan(root, target.db);
  try {
    const corpus = path.join(root, 'corpus');
    await mkdir(corpus);
    for (const t of set.texts) await writeFile(path.join(corpus, t.file), t.text);
    const summary = await walk(lifespan, { sourcePath: corpus });
    if (summary.status !== 'completed' || summary.items.failed > 0 || summary.passes.some((p) => !p.ok))
      throw new Error(`${engine}: the ${set.name} walk did not complete cleanly: ${JSON.stringify(summary.warnings)}`);
    const { rows } = await target.db.query<Found>(
      `SELECT d.rel_path, m.surface_form, m.canonical_name, m.entity_type
         FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id`,
    );
    return score(engine, set, rows);
  } finally {
    await lifespan.close();
    await target.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

function score(engine: string, set: NameSet, mentions: readonly Found[]): SetScore {
  const occurrences = set.texts.flatMap((t) =>
    t.names.map((n) => {
      const inText = mentions.filter((m) => m.rel_path === t.file && m.surface_form.includes(n.surface));
      const found = inText.sort((a, b) => a.surface_form.length - b.surface_form.length)[0];
      const cluster =
        found === undefined ? `not found: ${t.file} ${n.surface}` : `${found.entity_type}: ${found.canonical_name}`;
      return { file: t.file, surface: found?.surface_form ?? n.surface, entity: n.entity, cluster };
    }),
  );
  const pairs = { predicted: 0, truth: 0, together: 0 };
  for (let i = 0; i < occurrences.length; i++) {
    for (let j = i + 1; j < occurrences.length; j++) {
      const [a, b] = [occurrences[i]!, occurrences[j]!];
      const predicted = a.cluster === b.cluster;
      const truth = a.entity === b.entity;
      pairs.predicted += Number(predicted);
      pairs.truth += Number(truth);
      pairs.together += Number(predicted && truth);
    }
  }
  const precision = pairs.predicted === 0 ? 1 : pairs.together / pairs.predicted;
  const recall = pairs.truth === 0 ? 1 : pairs.together / pairs.truth;
  const byCluster = new Map<string, string[]>();
  for (const o of occurrences)
    byCluster.set(o.cluster, [...(byCluster.get(o.cluster) ?? []), `${o.file} ${o.surface}`]);
  return {
    set: set.name,
    engine,
    occurrences: occurrences.length,
    pairs,
    precision,
    recall,
    f1: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall),
    clusters: [...byCluster].map(([cluster, names]) => `${cluster} <- ${names.join(', ')}`),
  };
}
