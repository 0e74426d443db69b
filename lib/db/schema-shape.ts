// The tables and columns schema/ leaves behind, read from the migrations themselves so that
// there is one description of the schema: each table and column with the migration file that
// adds it. The reading knows the statements schema/ uses (CREATE TABLE, ALTER TABLE ADD, DROP
// and RENAME, DROP TABLE); test/schema-check.test.ts holds it to the catalog of a migrated
// database, so a migration it misreads fails there.

import type { Migration } from './migrate.ts';

export interface SchemaShape {
  /** Table name -> column name -> the migration file (a schema/ file, NNNN_name.sql) that adds it. */
  readonly tables: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** Table name -> the migration file that creates it. */
  readonly createdBy: ReadonlyMap<string, string>;
}

const NOT_A_COLUMN = new Set(['constraint', 'primary', 'unique', 'check', 'foreign', 'exclude', 'like']);

// A comment, a dollar-quoted body or a string literal: what a statement's shape never depends on.
const OPAQUE = /--[^\n]*|\$(\w*)\$[\s\S]*?\$\1\$|'(?:[^']|'')*'/g;

/** The statements of a script, comments dropped and string and dollar-quoted bodies blanked. */
function statements(sql: string): string[] {
  return sql
    .replace(OPAQUE, (token) => (token.startsWith('--') ? '' : "''"))
    .split(';')
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter((s) => s !== '');
}

/** Splits on the commas outside parentheses. */
function topLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    if (list[i] === '(') depth += 1;
    else if (list[i] === ')') depth -= 1;
    else if (list[i] === ',' && depth === 0) {
      parts.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(list.slice(start).trim());
  return parts;
}

class ShapeBuilder {
  readonly tables = new Map<string, Map<string, string>>();
  readonly createdBy = new Map<string, string>();

  create(table: string, body: string, file: string): void {
    const columns = new Map<string, string>();
    for (const element of topLevel(body)) {
      const name = /^(\w+)/.exec(element)?.[1]?.toLowerCase();
      if (name !== undefined && !NOT_A_COLUMN.has(name)) columns.set(name, file);
    }
    this.tables.set(table, columns);
    this.createdBy.set(table, file);
  }

  alter(table: string, actions: string, file: string): void {
    const columns = this.tables.get(table);
    if (columns === undefined) return;
    for (const action of topLevel(actions)) {
      const renameTable = /^RENAME TO (\w+)$/i.exec(action);
      const rename = /^RENAME (?:COLUMN )?(\w+) TO (\w+)$/i.exec(action);
      const add = /^ADD (?:COLUMN )?(?:IF NOT EXISTS )?(\w+)/i.exec(action);
      const drop = /^DROP (?:COLUMN )?(?:IF EXISTS )?(\w+)/i.exec(action);
      if (renameTable !== null) {
        this.drop(table);
        this.tables.set(renameTable[1]!.toLowerCase(), columns);
        this.createdBy.set(renameTable[1]!.toLowerCase(), file);
      } else if (rename !== null) {
        columns.delete(rename[1]!.toLowerCase());
        columns.set(rename[2]!.toLowerCase(), file);
      } else if (add !== null && !NOT_A_COLUMN.has(add[1]!.toLowerCase())) {
        columns.set(add[1]!.toLowerCase(), file);
      } else if (drop !== null && !NOT_A_COLUMN.has(drop[1]!.toLowerCase())) {
        columns.delete(drop[1]!.toLowerCase());
      }
    }
  }

  drop(table: string): void {
    this.tables.delete(table);
    this.createdBy.delete(table);
  }
}

/** What applying every migration leaves: its tables, each with its columns. */
export function schemaShape(migrations: readonly Migration[]): SchemaShape {
  const shape = new ShapeBuilder();
  for (const migration of migrations) {
    const file = `schema/${String(migration.version).padStart(4, '0')}_${migration.name}.sql`;
    for (const statement of statements(migration.sql)) {
      const create = /^CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?(\w+) ?\((.*)\)$/i.exec(statement);
      const alter = /^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?(\w+) (.*)$/i.exec(statement);
      const drop = /^DROP TABLE (?:IF EXISTS )?(.*?)(?: CASCADE| RESTRICT)?$/i.exec(statement);
      if (create !== null) shape.create(create[1]!.toLowerCase(), create[2]!, file);
      else if (alter !== null) shape.alter(alter[1]!.toLowerCase(), alter[2]!, file);
      else if (drop !== null) for (const table of topLevel(drop[1]!)) shape.drop(table.toLowerCase());
    }
  }
  return { tables: shape.tables, createdBy: shape.createdBy };
}
