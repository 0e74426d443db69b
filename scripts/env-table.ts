// Writes README.md's environment table from lib/config-table.ts (`npm run env-table`).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withEnvironmentTable } from '../lib/config-readme.ts';

const readme = fileURLToPath(new URL('../README.md', import.meta.url));
writeFileSync(readme, withEnvironmentTable(readFileSync(readme, 'utf8')));
