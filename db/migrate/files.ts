/**
 * The list of migrations, as drizzle-kit keeps it: `meta/_journal.json` names them in order
 * (each entry's `tag` is a file name without `.sql`), and each file's statements are split on
 * `--> statement-breakpoint`. Developers go on making them with `drizzle-kit generate` (or
 * `generate --custom` for hand-written SQL); nothing here writes to the folder.
 *
 * A file may open with header comments that the runner reads:
 *
 *     -- leasehold:no-transaction        statements run one by one in autocommit (CONCURRENTLY)
 *     -- leasehold:schema-version 2      the schema version after this migration
 *     -- leasehold:compatible-from 1     the oldest code schema version that still works after it
 *
 * Without a header a migration keeps the version and compatibility of the one before it (the
 * first: version 1, compatible from 1). A schema version without `compatible-from` means
 * compatible from that version only: older code refuses to start until told otherwise.
 *
 * Invariants: a migration's checksum is the sha256 of its file's bytes (what drizzle's own
 * journal stores as `hash`), so a landed file that changes by one byte is caught; the order is
 * the journal's, never the file names' or the timestamps'.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LeaseholdError } from '../errors.ts';
import { field } from '../queue/executor.ts';

/**
 * Leasehold's own migrations: drizzle-kit's output folder, two folders above this file's. In
 * the checkout that is `drizzle/` (from db/migrate/); in the package it is dist/drizzle (from
 * dist/db/migrate/), where scripts/build-package.ts copies them.
 */
export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'drizzle');

export interface Migration {
  /** The journal's tag: the file name without `.sql`. */
  name: string;
  /** Its place in the list, from 0. */
  position: number;
  file: string;
  /** sha256 of the file's bytes, hex. */
  checksum: string;
  /** The statements, split on breakpoints; empty ones dropped. */
  statements: string[];
  /** False with `-- leasehold:no-transaction`. */
  transaction: boolean;
  schemaVersion: number;
  compatibleFrom: number;
}

/** A folder that the runner must not apply: the list, the files or a header is wrong. */
export class MigrationFolderError extends LeaseholdError {
  readonly code = 'migration_folder_invalid';

  constructor(
    readonly folder: string,
    readonly problems: string[],
  ) {
    super(
      `Leasehold will not migrate from ${folder}: ${problems.join('; ')}. ` +
        'Make migrations with `npx drizzle-kit generate` (or `npx drizzle-kit generate --custom --name what`), ' +
        'which lists them in meta/_journal.json.',
    );
    this.name = 'MigrationFolderError';
  }
}

export const BREAKPOINT = '--> statement-breakpoint';
const DIRECTIVE = /^--\s*leasehold:(\S+)(?:\s+(.*?))?\s*$/;
// A file's first lines: comments (not a breakpoint) and blank lines.
const HEADER_LINE = /^\s*(?:--(?!>).*)?$/;

interface Inspection {
  migrations: Migration[];
  /** Problems that make the folder unusable (the runner refuses). */
  blocking: string[];
  /** Problems only CI refuses (names out of journal order). */
  style: string[];
}

/** The folder's migrations in journal order; throws MigrationFolderError on any blocking problem. */
export function readMigrations(folder: string): Migration[] {
  const { migrations, blocking } = inspect(folder);
  if (blocking.length > 0) throw new MigrationFolderError(folder, blocking);
  return migrations;
}

/** Every problem of the folder, for `npm run db:check` (an empty list: all is well). */
export function checkMigrationsFolder(folder: string): string[] {
  const { blocking, style } = inspect(folder);
  return [...blocking, ...style];
}

function inspect(folder: string): Inspection {
  const blocking: string[] = [];
  const style: string[] = [];
  const journalFile = path.join(folder, 'meta', '_journal.json');
  if (!existsSync(journalFile)) {
    return { migrations: [], blocking: [`${journalFile} is missing`], style };
  }
  let tags: string[];
  try {
    const journal: unknown = JSON.parse(readFileSync(journalFile, 'utf8'));
    const entries = field(journal, 'entries');
    if (!Array.isArray(entries)) throw new Error('it has no "entries" list');
    tags = entries.map((entry: unknown, index) => {
      const tag = field(entry, 'tag');
      const idx = field(entry, 'idx');
      if (typeof tag !== 'string' || tag === '') throw new Error(`entry ${index} has no tag`);
      if (idx !== undefined && idx !== index) {
        blocking.push(`meta/_journal.json entry ${index} ("${tag}") says idx ${JSON.stringify(idx)}`);
      }
      return tag;
    });
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    return { migrations: [], blocking: [`${journalFile} cannot be read: ${why}`], style };
  }

  const files = readdirSync(folder).filter((f) => f.endsWith('.sql'));
  const listed = new Set(tags);
  for (const tag of tags.filter((t, i) => tags.indexOf(t) !== i)) {
    blocking.push(`meta/_journal.json lists "${tag}" twice`);
  }
  for (const tag of tags) {
    if (!files.includes(`${tag}.sql`)) blocking.push(`meta/_journal.json lists "${tag}" but ${tag}.sql is missing`);
  }
  for (const file of files) {
    const tag = file.slice(0, -'.sql'.length);
    if (!listed.has(tag)) blocking.push(`${file} is not listed in meta/_journal.json`);
  }
  const sorted = [...tags].sort();
  const outOfOrder = tags.findIndex((tag, i) => sorted[i] !== tag);
  if (outOfOrder >= 0) {
    style.push(
      `the names do not sort in journal order: "${tags[outOfOrder]}" is number ${outOfOrder + 1} in ` +
        `meta/_journal.json but "${sorted[outOfOrder]}" sorts there`,
    );
  }
  if (blocking.length > 0) return { migrations: [], blocking, style };

  const migrations: Migration[] = [];
  let previous = { schemaVersion: 1, compatibleFrom: 1 };
  for (const [position, name] of tags.entries()) {
    const file = path.join(folder, `${name}.sql`);
    const bytes = readFileSync(file);
    const parsed = parseMigration(name, bytes.toString('utf8'), previous);
    blocking.push(...parsed.problems);
    migrations.push({
      name,
      position,
      file,
      checksum: createHash('sha256').update(bytes).digest('hex'),
      statements: parsed.statements,
      transaction: parsed.transaction,
      schemaVersion: parsed.schemaVersion,
      compatibleFrom: parsed.compatibleFrom,
    });
    previous = parsed;
  }
  return { migrations, blocking, style };
}

interface Parsed {
  statements: string[];
  transaction: boolean;
  schemaVersion: number;
  compatibleFrom: number;
  problems: string[];
}

function parseMigration(
  name: string,
  text: string,
  previous: { schemaVersion: number; compatibleFrom: number },
): Parsed {
  const problems: string[] = [];
  const lines = text.split(/\r?\n/);
  const headerEnd = lines.findIndex((line) => !HEADER_LINE.test(line));
  const header = headerEnd < 0 ? lines.length : headerEnd;
  let transaction = true;
  let declaredVersion: number | null = null;
  let declaredFrom: number | null = null;
  for (const [index, line] of lines.entries()) {
    const match = DIRECTIVE.exec(line.trim());
    if (!match) continue;
    const [, directive, argument] = match;
    if (index >= header) {
      problems.push(
        `${name}.sql has "-- leasehold:${directive}" on line ${index + 1}: put it in the header, before the first statement`,
      );
      continue;
    }
    if (directive === 'no-transaction' && !argument) transaction = false;
    else if (directive === 'schema-version' || directive === 'compatible-from') {
      const value = Number(argument);
      if (!Number.isInteger(value) || value < 1) {
        problems.push(
          `${name}.sql: "-- leasehold:${directive}" needs a whole number of at least 1, not "${argument ?? ''}"`,
        );
      } else if (directive === 'schema-version') declaredVersion = value;
      else declaredFrom = value;
    } else
      problems.push(
        `${name}.sql: "-- leasehold:${directive}" is not a Leasehold header (no-transaction, schema-version N, compatible-from N)`,
      );
  }
  const schemaVersion = declaredVersion ?? previous.schemaVersion;
  const compatibleFrom = declaredFrom ?? declaredVersion ?? previous.compatibleFrom;
  if (schemaVersion < previous.schemaVersion) {
    problems.push(
      `${name}.sql declares schema version ${schemaVersion}, below the ${previous.schemaVersion} before it`,
    );
  } else if (compatibleFrom > schemaVersion) {
    problems.push(
      `${name}.sql is compatible from version ${compatibleFrom}, above its own schema version ${schemaVersion}`,
    );
  } else if (compatibleFrom < previous.compatibleFrom) {
    problems.push(
      `${name}.sql is compatible from version ${compatibleFrom}, but code older than ${previous.compatibleFrom} ` +
        'already stopped working before it',
    );
  }
  const statements = text.split(BREAKPOINT).filter((chunk) => !isBlank(chunk));
  if (transaction && statements.some((s) => /\bCONCURRENTLY\b/i.test(withoutComments(s)))) {
    problems.push(
      `${name}.sql uses CONCURRENTLY, which cannot run in a transaction: make "-- leasehold:no-transaction" its first line`,
    );
  }
  return { statements, transaction, schemaVersion, compatibleFrom, problems };
}

function withoutComments(sql: string): string {
  return sql.replace(/--.*$/gm, '');
}

function isBlank(sql: string): boolean {
  return withoutComments(sql).trim() === '';
}

/**
 * The names of the indexes a statement builds concurrently (`CREATE [UNIQUE] INDEX CONCURRENTLY
 * [IF NOT EXISTS] name`): an invalid index of that name is what a failed run of it left.
 */
export function concurrentIndexNames(statement: string): string[] {
  const pattern =
    /\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))/gi;
  const names: string[] = [];
  for (const match of withoutComments(statement).matchAll(pattern)) {
    const quoted = match[1];
    const bare = match[2];
    if (quoted !== undefined) names.push(quoted.replaceAll('""', '"'));
    else if (bare !== undefined && bare.toUpperCase() !== 'ON') names.push(bare.toLowerCase());
  }
  return names;
}
