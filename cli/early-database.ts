// The embedded database of a command that opens it first thing (walk, watch, search), opened as the
// command starts: its process boots, and the migrations and schema are checked, while the
// command's modules load, where they used to wait for them (bench/README.md "The first walk": a
// no-op walk spent some 400 ms opening the database after 500 ms of loading modules).
//
// Only a database that exists: a command refused for its arguments creates nothing.

import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';

export class EarlyDatabase {
  readonly #opening: Promise<Database>;
  #taken = false;

  private constructor(opening: Promise<Database>) {
    this.#opening = opening;
    // A failure is the command's to report, when it takes the database.
    opening.catch(() => {});
  }

  /** Starts opening the configured database when it is an embedded one that exists; else null. */
  static start(config: Config): EarlyDatabase | null {
    const { dsn, embeddedDir } = config.database;
    if (dsn !== null || !existsSync(path.join(embeddedDir, 'PG_VERSION'))) return null;
    return new EarlyDatabase(import('../lib/db/open.ts').then(({ openDatabase }) => openDatabase(config)));
  }

  /** The database, which the command then owns (and closes). */
  take(): Promise<Database> {
    this.#taken = true;
    return this.#opening;
  }

  /** Closes the database if the command ended without taking it. */
  async release(): Promise<void> {
    if (this.#taken) return;
    await this.#opening.then(
      (db) => db.close(),
      () => {},
    );
  }
}
