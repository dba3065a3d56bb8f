/**
 * The habits `npm run lint` keeps (issue 34, item 7), proved on scratch trees in the OS temp
 * folder (never the real tree; removed afterwards): the repository's .oxlintrc.json fails an
 * import circle in workers/ (type-only imports count) and an explicit `any`, and
 * scripts/count-casts.ts --max fails over its ceiling, counts each call of a cast helper as a
 * cast, and refuses `@ts-ignore`/`@ts-expect-error` outside tests. No database is used.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './cli.ts';

const OXLINT = path.join(ROOT, 'node_modules', 'oxlint', 'bin', 'oxlint');
const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const CONFIGS = ['.oxlintrc.json', path.join('scripts', 'lint-boundaries.json')];
const scratch = mkdtempSync(path.join(os.tmpdir(), 'leasehold-lint-habits-'));
let trees = 0;

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A fresh tree with the repository's lint configuration and `files`; returns its folder. */
function tree(files: Record<string, string>): string {
  const dir = path.join(scratch, String(trees++));
  for (const [file, text] of [
    ...CONFIGS.map((c) => [c, null] as const),
    ...Object.entries(files),
    [
      'tsconfig.json',
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, module: 'nodenext', allowImportingTsExtensions: true },
        include: ['**/*.ts'],
      }),
    ] as const,
  ]) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    if (text === null) copyFileSync(path.join(ROOT, file), path.join(dir, file));
    else writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

/** The rules oxlint reports, as `file: rule`. */
function lint(files: Record<string, string>): { status: number | null; found: string[] } {
  const dir = tree(files);
  const run = spawnSync(process.execPath, [OXLINT, '-c', '.oxlintrc.json', '-f', 'json', ...Object.keys(files)], {
    cwd: dir,
    encoding: 'utf8',
  });
  if (run.error) throw run.error;
  const { diagnostics } = JSON.parse(run.stdout) as { diagnostics: { code: string; filename: string }[] };
  return {
    status: run.status,
    found: diagnostics.map((d) => `${path.normalize(d.filename)}: ${d.code}`).sort(),
  };
}

function countCasts(files: Record<string, string>, max: number) {
  const dir = tree(files);
  const run = spawnSync(
    process.execPath,
    [TSX, path.join(ROOT, 'scripts', 'count-casts.ts'), 'workers', '--max', String(max)],
    { cwd: dir, encoding: 'utf8' },
  );
  if (run.error) throw run.error;
  return run;
}

describe('oxlint (the repository’s .oxlintrc.json)', () => {
  it('fails an import circle in workers/, also of type-only imports', () => {
    const run = lint({
      'workers/health.ts': "import type { Status } from './worker.ts';\nexport type Report = { worker: Status };\n",
      'workers/worker.ts': "import type { Report } from './health.ts';\nexport type Status = { last?: Report };\n",
    });
    expect(run.status).toBe(1);
    expect(run.found).toEqual([
      `${path.normalize('workers/health.ts')}: import(no-cycle)`,
      `${path.normalize('workers/worker.ts')}: import(no-cycle)`,
    ]);
  });

  it('passes the same types owned by one module that the other imports', () => {
    const run = lint({
      'workers/health.ts': 'export type Status = { ok: boolean };\nexport type Report = { worker: Status };\n',
      'workers/worker.ts':
        "import type { Status } from './health.ts';\nexport const status = (): Status => ({ ok: true });\n",
    });
    expect(run).toEqual({ status: 0, found: [] });
  });

  it('fails an explicit any', () => {
    const run = lint({ 'workers/parse.ts': 'export const parse = (text: string): any => JSON.parse(text);\n' });
    expect(run.status).toBe(1);
    expect(run.found).toEqual([`${path.normalize('workers/parse.ts')}: typescript(no-explicit-any)`]);
  });

  it('fails a product function over 119 lines and a product file over 612, not a test', () => {
    const body = (lines: number) => Array.from({ length: lines }, (_, i) => `  total += ${i};`).join('\n');
    const fn = (name: string, lines: number) =>
      `export function ${name}(): number {\n  let total = 0;\n${body(lines - 4)}\n  return total;\n}\n`;
    const fits = lint({ 'workers/small.ts': fn('small', 119) });
    expect(fits).toEqual({ status: 0, found: [] });
    const run = lint({
      'workers/long.ts': fn('long', 120),
      'lib/big.ts': Array.from({ length: 6 }, (_, i) => fn(`part${i}`, 110)).join(''),
      'workers/long.test.ts': fn('longTest', 700),
    });
    expect(run.status).toBe(1);
    expect(run.found).toEqual([
      `${path.normalize('lib/big.ts')}: eslint(max-lines)`,
      `${path.normalize('workers/long.ts')}: eslint(max-lines-per-function)`,
    ]);
  });
});

describe('scripts/count-casts.ts --max', () => {
  const MODULE = [
    'const asNumber = (v: unknown) => v as number;',
    'function asText(v: unknown): string {',
    '  return v as string;',
    '}',
    "export const a = asNumber('1') + asNumber('2');",
    "export const b = asText(3) + (JSON.parse('1') as string) + ('y' as const);",
    '',
  ].join('\n');

  it('counts each call of a cast helper as a cast, and fails over the ceiling', () => {
    // Two helper bodies, three calls of them and one plain cast; `as const` is no cast.
    const within = countCasts({ 'workers/x.ts': MODULE }, 6);
    expect(within.status, within.stderr).toBe(0);
    expect(within.stdout).toContain('count-casts: 6 casts in the modules, within the ceiling of 6');
    expect(within.stdout).toMatch(/cast helpers \(each call counts as a cast\): asNumber \(workers\/x\.ts\), asText/);
    const over = countCasts({ 'workers/x.ts': MODULE }, 5);
    expect(over.status).toBe(1);
    expect(over.stderr).toContain('the modules hold 6 casts, over the ceiling of 5');
  });

  it('refuses @ts-ignore and @ts-expect-error outside tests, and lets tests have them', () => {
    const off = countCasts(
      {
        'workers/x.ts': '// @ts-ignore\nexport const n: number = "1";\n',
        'workers/x.test.ts': '// @ts-expect-error\nexport const t: number = "1";\n',
      },
      10,
    );
    expect(off.status).toBe(1);
    expect(off.stderr).toMatch(/@ts-ignore, @ts-expect-error or @ts-nocheck outside tests, in workers\/x\.ts: /);
    const tests = countCasts({ 'workers/x.test.ts': '// @ts-expect-error\nexport const t: number = "1";\n' }, 10);
    expect(tests.status, tests.stderr).toBe(0);
  });
});
