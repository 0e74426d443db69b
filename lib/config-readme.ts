// README.md's environment table, rendered from the variables' table (lib/config-table.ts):
// `npm run env-table` writes it into README.md, test/config-readme.test.ts checks it is there.

import { VARIABLES } from './config-table.ts';

const HEADER = ['| variable | default | meaning |', '| --- | --- | --- |'];

/** The table as markdown lines, one row per variable in the table's order. */
export function environmentTable(): string[] {
  return [
    ...HEADER,
    ...Object.entries(VARIABLES).map(([name, variable]) => `| \`${name}\` | ${variable.unset} | ${variable.meaning} |`),
  ];
}

/** The README's table: its header and every table line that follows it; null without one. */
export function tableIn(readme: string): { start: number; lines: string[] } | null {
  const lines = readme.split('\n');
  const start = lines.indexOf(HEADER[0]!);
  if (start === -1) return null;
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end += 1;
  return { start, lines: lines.slice(start, end) };
}

/** The README with its environment table replaced by the rendered one. */
export function withEnvironmentTable(readme: string): string {
  const found = tableIn(readme);
  if (found === null) throw new Error(`README.md has no table headed "${HEADER[0]}"`);
  const lines = readme.split('\n');
  lines.splice(found.start, found.lines.length, ...environmentTable());
  return lines.join('\n');
}
