// `ingest qa proposals | decide`: the Q&A dedup proposals of stage 5 (ii), both pairs side by
// side, and a decision on one (the platform normally records decisions itself; this is for
// operators and tests).

import { parseArgs } from 'node:util';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import {
  DECISIONS,
  PROPOSAL_STATUSES,
  ProposalNotFoundError,
  decideProposal,
  listProposals,
  type Decision,
  type ProposalStatus,
  type ProposalView,
} from '../stages/qa-dedup/inspect.ts';
import { usageError } from './usage.ts';
import { withDatabase } from './with-database.ts';

interface Context {
  config: Config;
  log: Logger;
}

export async function qaProposalsCommand(args: string[], { config }: Context): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      status: { type: 'string' },
      json: { type: 'boolean', default: false },
      limit: { type: 'string', default: '100' },
    },
  });
  const status = values.status ?? null;
  if (status !== null && !PROPOSAL_STATUSES.includes(status as ProposalStatus))
    throw usageError(`--status must be one of ${PROPOSAL_STATUSES.join(', ')}`);
  const limit = Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) throw usageError('--limit must be a whole number >= 1');
  const proposals = await withDatabase(config, (db) =>
    listProposals(db, { status: status as ProposalStatus | null, limit }),
  );
  if (values.json) {
    process.stdout.write(`${JSON.stringify(proposals)}\n`);
    return 0;
  }
  process.stdout.write(proposals.length === 0 ? 'no proposals\n' : `${proposals.map(sideBySide).join('\n')}`);
  return 0;
}

const COLUMN = 60;

/** One proposal as a header line and the two pairs in two columns, wrapped. */
function sideBySide(p: ProposalView): string {
  const wrap = (text: string) => {
    const lines: string[] = [];
    let line = '';
    for (const word of text.split(/\s+/).filter((w) => w !== '')) {
      if (line !== '' && line.length + 1 + word.length > COLUMN) {
        lines.push(line);
        line = '';
      }
      line = line === '' ? word : `${line} ${word}`;
    }
    return [...lines, line];
  };
  const column = (side: ProposalView['a']) => [
    side.document,
    ...wrap(`Q: ${side.question}`),
    ...wrap(`A: ${side.answer ?? ''}`),
  ];
  const left = column(p.a);
  const right = column(p.b);
  const rows = Array.from({ length: Math.max(left.length, right.length) }, (_, i) =>
    `  ${(left[i] ?? '').slice(0, COLUMN).padEnd(COLUMN)} | ${right[i] ?? ''}`.trimEnd(),
  );
  return `${p.id}  ${p.status}  similarity ${p.similarity.toFixed(3)}\n${rows.join('\n')}\n`;
}

export async function qaDecideCommand(args: string[], { config }: Context): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
  const [id, decision] = positionals;
  if (positionals.length !== 2 || !(decision! in DECISIONS))
    throw usageError('give a proposal id and accept or reject');
  try {
    const result = await withDatabase(config, (db) => decideProposal(db, id!, decision as Decision));
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof ProposalNotFoundError)) throw error;
    process.stderr.write(`ingest: ${error.message}\n`);
    return 1;
  }
}
