/**
 * SQL is not spliced (CONTRIBUTING.md, "Writing SQL"). Two checks:
 *
 * - the linter's: `no-restricted-properties` in .oxlintrc.json forbids `sql.raw` (drizzle's and
 *   Kysely's, under the local names `sql`, `drizzleSql`, `kyselySql`) and postgres.js's
 *   `sql.unsafe`, except in the files of the override that turns it off (the splice allowlist).
 *   Fixtures are linted in a scratch tree (as test/lint-boundaries.test.ts does): the rule
 *   fires outside the allowlist, not inside, and the allowlist is the one CONTRIBUTING names;
 * - this file's scan of the product's sources, for what oxlint cannot express: a statement
 *   built as a string at the call (`query(\`… ${x} …\`)`, `runText(executor, \`…${x}\`)`,
 *   `query('…' + x)`), and calls of executor.ts's template conversion `sqlText`, outside
 *   STRING_BUILT below.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineOf, productFiles, ROOT, sourceOf } from './product-files.ts';

const OXLINT = path.join(ROOT, 'node_modules', 'oxlint', 'bin', 'oxlint');
const CONFIGS = ['.oxlintrc.json', 'scripts/lint-boundaries.json'];
const RULE = 'no-restricted-properties';

/** .oxlintrc.json is JSON with whole-line comments. */
function oxlintConfig(): { overrides: { files: string[]; rules: Record<string, unknown> }[] } {
  const text = readFileSync(path.join(ROOT, '.oxlintrc.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '');
  return JSON.parse(text) as { overrides: { files: string[]; rules: Record<string, unknown> }[] };
}

/** The splice allowlist: the files of the override that turns the rule off. */
function spliceAllowlist(): string[] {
  const overrides = oxlintConfig().overrides.filter((o) => o.rules[RULE] === 'off');
  expect(overrides).toHaveLength(1);
  return overrides[0]!.files;
}

/** The files CONTRIBUTING.md's "Splice allowlist" names, each on a `- \`path\`: reason` line. */
function contributingAllowlist(): Map<string, string> {
  const text = readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const section = text.split(/^### Splice allowlist/m)[1]?.split(/^#/m)[0] ?? '';
  return new Map(
    [...section.matchAll(/^- `([^`]+)`(?: and `([^`]+)`)?: (.+)$/gm)].flatMap((m) => {
      const reason = m[3]!.trim();
      return [m[1]!, ...(m[2] ? [m[2]] : [])].map((file) => [file, reason] as const);
    }),
  );
}

interface Diagnostic {
  code: string;
  message: string;
  help?: string;
  filename: string;
}

let scratch: string | undefined;
const results = new Map<string, Diagnostic[]>();

const SPLICES = {
  drizzle: "import { sql } from 'drizzle-orm';\nexport const q = sql.raw('SELECT 1');\n",
  alias: "import { sql as drizzleSql } from 'drizzle-orm';\nexport const q = drizzleSql.raw('SELECT 1');\n",
  kysely: "declare const kyselySql: { raw(text: string): unknown };\nexport const q = kyselySql.raw('SELECT 1');\n",
  unsafe:
    'declare const sql: { unsafe(text: string): unknown };\nexport const q = (text: string) => sql.unsafe(text);\n',
};

/** Outside the allowlist, in product folders and in a test. */
const OUTSIDE = [
  { file: 'db/queue/new-statement.ts', source: SPLICES.drizzle },
  { file: 'db/queries/new-read.ts', source: SPLICES.alias },
  { file: 'workers/new-runner.ts', source: SPLICES.unsafe },
  { file: 'lib/new-query.ts', source: SPLICES.kysely },
  { file: 'db/queue/new-statement.test.ts', source: SPLICES.drizzle },
];

beforeAll(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'leasehold-splice-'));
  const inside = spliceAllowlist().map((file) => ({
    file,
    source: SPLICES.alias + SPLICES.unsafe.replace('q =', 'u ='),
  }));
  const fixtures = [...OUTSIDE, ...inside];
  for (const file of [...CONFIGS, ...fixtures.map((f) => f.file)]) {
    mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
  }
  for (const config of CONFIGS) copyFileSync(path.join(ROOT, config), path.join(scratch, config));
  for (const f of fixtures) writeFileSync(path.join(scratch, f.file), f.source);
  const args = [OXLINT, '-c', '.oxlintrc.json', '-f', 'json', ...fixtures.map((f) => f.file)];
  const run = spawnSync(process.execPath, args, { cwd: scratch, encoding: 'utf8' });
  if (run.error) throw run.error;
  const { diagnostics } = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
  for (const f of fixtures) {
    results.set(
      f.file,
      diagnostics.filter((d) => path.normalize(d.filename) === path.normalize(f.file)),
    );
  }
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the splice rule (oxlint no-restricted-properties)', () => {
  it.each(OUTSIDE)('fires in $file, off the allowlist', ({ file }) => {
    expect(results.get(file)).toContainEqual(
      expect.objectContaining({
        code: `eslint(${RULE})`,
        message: expect.stringMatching(/^'(sql|drizzleSql|kyselySql)\.(raw|unsafe)' is restricted/),
        help: expect.stringContaining('CONTRIBUTING.md, Writing SQL'),
      }),
    );
  });

  it('stays quiet in every allowlisted file', () => {
    const noisy = spliceAllowlist().filter((file) => results.get(file)!.some((d) => d.code === `eslint(${RULE})`));
    expect(noisy).toEqual([]);
  });

  it('has the allowlist CONTRIBUTING.md names, each file with its reason', () => {
    const named = contributingAllowlist();
    expect([...named.keys()].sort()).toEqual([...spliceAllowlist()].sort());
    for (const [file, reason] of named) expect(reason.length, file).toBeGreaterThan(20);
  });

  it('lists only files that exist and still splice', () => {
    for (const file of spliceAllowlist()) {
      expect(existsSync(path.join(ROOT, file)), `${file} is on the splice allowlist but does not exist`).toBe(true);
      expect(sourceOf(file), `${file} is on the splice allowlist but splices nothing`).toMatch(/\.(raw|unsafe)\(/);
    }
  });
});

/**
 * Files that build a statement as a string at the call, and why: each one's strings are
 * identifiers or constants, never values (values go as parameters).
 */
const STRING_BUILT: Record<string, string> = {
  'db/migrate/index.ts':
    'DROP INDEX CONCURRENTLY of a leftover index, its name quoted by quoteIdent: DDL takes no parameters',
  'db/migrate/search-indexes.ts':
    'CREATE and DROP INDEX CONCURRENTLY of the search indexes: names, kinds and paths checked against their patterns, DDL takes no parameters',
  'cli/database-select.ts': 'CREATE and DROP DATABASE of names the tool made, escaped: DDL takes no parameters',
  'testing/database.ts': 'CREATE and DROP DATABASE of the test databases it names, quoted: DDL takes no parameters',
  'workers/listener.ts': 'LISTEN on the wake channel, escaped by escapeIdentifier: LISTEN takes no parameters',
  'db/queue/results.ts': 'LISTEN and UNLISTEN on JOB_ENDED_CHANNEL, a constant name: LISTEN takes no parameters',
  'db/queue/executor.ts': 'sqlText itself: the conversion of a fixed $n text into a drizzle SQL object',
  'db/queue/claim.ts': "claimStatement: the claim's fixed text as a drizzle SQL object (sqlText), for EXPLAIN",
};

const CALL = /\b(?:query|execute|runText|runStatement|unsafe)\s*\(/g;

/** The statements built as strings at a query call in `source`, and the calls of sqlText. */
function stringBuilt(source: string): { line: number; text: string }[] {
  const found: { line: number; text: string }[] = [];
  for (const match of source.matchAll(CALL)) {
    // The first two arguments: (text, …) or (executor, text, …).
    let i = match.index + match[0].length;
    for (let argument = 0; argument < 2 && i < source.length; argument++) {
      while (/\s/.test(source[i]!)) i++;
      const quote = source[i];
      if (quote === '`') {
        const end = templateEnd(source, i);
        if (source.slice(i, end).includes('${')) found.push({ line: lineOf(source, match.index), text: match[0] });
        break;
      }
      if (quote === "'" || quote === '"') {
        const end = source.indexOf(quote, i + 1);
        if (/^\s*\+/.test(source.slice(end + 1))) found.push({ line: lineOf(source, match.index), text: match[0] });
        break;
      }
      // An identifier (the executor): skip to the comma and look at the next argument.
      const word = /^[\w.!?]+\s*,/.exec(source.slice(i));
      if (!word) break;
      i += word[0].length;
    }
  }
  for (const match of source.matchAll(/\bsqlText\s*\(/g))
    found.push({ line: lineOf(source, match.index), text: match[0] });
  return found;
}

/** The index just past the template literal opening at `start` (up to its first `${` is enough). */
function templateEnd(source: string, start: number): number {
  for (let i = start + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === '`') return i + 1;
    else if (source[i] === '$' && source[i + 1] === '{') return i + 2;
  }
  return source.length;
}

describe('statements built as strings', () => {
  it('are found by the scan (its fixtures)', () => {
    const spliced = [
      'await pool.query(`SELECT * FROM leasehold.jobs WHERE id = ${id}`);',
      'await runText(executor, `SELECT ${columns} FROM leasehold.jobs`, []);',
      "await client.query('SELECT * FROM t WHERE id = ' + id);",
      'await db.execute(`DELETE FROM t WHERE k = ${k}`)',
      'const q = sqlText(text, values);',
      'await executor.runStatement(\n  `SELECT ${x}`, []);',
    ];
    for (const line of spliced) expect(stringBuilt(line), line).toHaveLength(1);
    const clean = [
      'await pool.query(`SELECT * FROM leasehold.jobs WHERE id = $1`, [id]);',
      'await runText(executor, COMPLETE_MANY, [ids, token], name);',
      "await client.query('SELECT 1');",
      'await run(db, sql`SELECT * FROM t WHERE id = ${id}`);',
      'await db.execute(sql`DELETE FROM t WHERE k = ${k}`);',
      'const text = `a ${b}`; // not at a call',
    ];
    for (const line of clean) expect(stringBuilt(line), line).toEqual([]);
  });

  it('appear in no product file off the list, and every file on it still builds one', () => {
    const files = productFiles();
    const found = files
      .filter((file) => !(file in STRING_BUILT))
      .flatMap((file) => stringBuilt(sourceOf(file)).map((s) => `${file}:${s.line}: ${s.text}`));
    expect(found).toEqual([]);
    for (const file of Object.keys(STRING_BUILT)) {
      expect(files, file).toContain(file);
      expect(stringBuilt(sourceOf(file)), file).not.toEqual([]);
    }
  });
});
