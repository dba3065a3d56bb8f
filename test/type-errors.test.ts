/**
 * What a user reads when a payload names a field its contract lacks: the compiler's own text,
 * under TypeScript 7 (this repository's `tsc`) and TypeScript 5.9 (fetched once, pinned, into
 * .leasehold/typescript-<version>, as test/package/common.ts fetches Node binaries). Fixtures
 * are written into a scratch folder under .leasehold/ (so `zod` resolves from this checkout's
 * node_modules; removed afterwards) and import Leasehold through its public entry names.
 *
 * The first diagnostic at a wrong line must name the field given and suggest the schema's own
 * (`'userID' … Did you mean … 'userId'?`) in its first line, not an overload list whose last
 * entry says a contract is not a spec; the correct fixture compiles with no diagnostic at all.
 * No database is used.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DIR } from '../cli/database-select.ts';

/** The TypeScript 5.x users still run most (the package's peer range is >=5.1). */
const TYPESCRIPT_5 = '5.9.3';

const TSC_5 = path.join(
  PROJECT_DIR,
  '.leasehold',
  `typescript-${TYPESCRIPT_5}`,
  'node_modules',
  'typescript',
  'bin',
  'tsc',
);
const COMPILERS: Record<string, string> = {
  'TypeScript 7': path.join(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc'),
  'TypeScript 5.9': TSC_5,
};

const HEAD = `import { z } from 'zod';
import { defineJob, enqueue, enqueueMany, type Executor } from 'leasehold';
import { defineHandler } from 'leasehold/worker';
declare const tx: Executor;
export const welcomeJob = defineJob({
  kind: 'welcome.send',
  version: 1,
  schema: z.object({ userId: z.number().int(), email: z.string() }),
});
`;

/** Each line a wrong fixture gets wrong, with the field it names and the one it should suggest. */
const LINES = {
  enqueue: (field: string) => `void enqueue(tx, welcomeJob, { ${field}: 1, email: 'a@example.com' });`,
  enqueueWithOptions: (field: string) =>
    `void enqueue(tx, welcomeJob, { ${field}: 1, email: 'a@example.com' }, { priority: 1 });`,
  enqueueMany: (field: string) => `void enqueueMany(tx, welcomeJob, [{ ${field}: 1, email: 'a@example.com' }]);`,
  defineHandler: (field: string) =>
    `export const handler = defineHandler(welcomeJob, async ({ payload }) => payload.${field} + 1, { timeoutMs: 5_000 });`,
  defineHandlerObject: (field: string) =>
    `export const objectHandler = defineHandler({ kind: 'welcome.object', versions: [1], timeoutMs: 5_000, schema: welcomeJob.schema, handle: async ({ payload }) => payload.${field} + 1 });`,
};
type LineName = keyof typeof LINES;

function fixture(field: string): string {
  return `${HEAD}${Object.values(LINES)
    .map((line) => line(field))
    .join('\n')}\n`;
}

/** The 1-based line of each fixture line. */
function lineOf(name: LineName): number {
  return HEAD.split('\n').length + Object.keys(LINES).indexOf(name);
}

interface Diagnostic {
  file: string;
  line: number;
  code: string;
  /** The first line of the message: what an editor shows first. */
  head: string;
  /** The whole message, with its indented chain. */
  text: string;
}

function parse(output: string): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const line of output.split('\n')) {
    const match = /^(.+?)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line);
    if (match) {
      diagnostics.push({
        file: path.basename(match[1] ?? ''),
        line: Number(match[2]),
        code: match[3] ?? '',
        head: match[4] ?? '',
        text: match[4] ?? '',
      });
    } else if (line.startsWith(' ') && diagnostics.length > 0) {
      const last = diagnostics[diagnostics.length - 1];
      if (last) last.text += `\n${line}`;
    }
  }
  return diagnostics;
}

let scratch = '';
const results = new Map<
  string,
  { version: string; status: number | null; output: string; diagnostics: Diagnostic[] }
>();

beforeAll(() => {
  const prefix = path.join(PROJECT_DIR, '.leasehold', `typescript-${TYPESCRIPT_5}`);
  if (!existsSync(TSC_5)) {
    const install = spawnSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `typescript@${TYPESCRIPT_5}`],
      { cwd: PROJECT_DIR, encoding: 'utf8' },
    );
    if (install.status !== 0) throw new Error(`fetching typescript@${TYPESCRIPT_5} failed: ${install.stderr}`);
  }
  mkdirSync(path.join(PROJECT_DIR, '.leasehold'), { recursive: true });
  scratch = mkdtempSync(path.join(PROJECT_DIR, '.leasehold', 'type-errors-'));
  writeFileSync(path.join(scratch, 'wrong.ts'), fixture('userID'));
  writeFileSync(path.join(scratch, 'right.ts'), fixture('userId'));
  writeFileSync(
    path.join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        lib: ['ES2023'],
        module: 'esnext',
        moduleResolution: 'bundler',
        allowImportingTsExtensions: true,
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        paths: {
          leasehold: [path.join(PROJECT_DIR, 'entry', 'index.ts')],
          'leasehold/worker': [path.join(PROJECT_DIR, 'entry', 'worker.ts')],
        },
      },
      files: ['wrong.ts', 'right.ts'],
    }),
  );
  for (const [name, tsc] of Object.entries(COMPILERS)) {
    const run = spawnSync(process.execPath, [tsc, '-p', path.join(scratch, 'tsconfig.json'), '--pretty', 'false'], {
      cwd: scratch,
      encoding: 'utf8',
    });
    const output = `${run.stdout}${run.stderr}`;
    const version = spawnSync(process.execPath, [tsc, '--version'], { encoding: 'utf8' }).stdout.trim();
    results.set(name, { version, status: run.status, output, diagnostics: parse(output) });
  }
}, 180_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe.each(Object.keys(COMPILERS))('under %s', (compiler) => {
  const result = () => {
    const r = results.get(compiler);
    if (!r) throw new Error(`${compiler} did not run`);
    return r;
  };

  it('ran the compiler it names and it found the wrong fixture wrong', () => {
    expect(result().version).toMatch(compiler === 'TypeScript 7' ? /^Version 7\./ : /^Version 5\.9\./);
    // tsc 5 exits 2 when it emitted nothing for errors, tsc 7 exits 1: either way, not 0.
    expect([1, 2]).toContain(result().status);
    expect(result().diagnostics.length).toBeGreaterThan(0);
  });

  it('compiles the correct fixture with no diagnostic', () => {
    expect(result().diagnostics.filter((d) => d.file === 'right.ts')).toEqual([]);
    expect(result().output).not.toMatch(/right\.ts/);
  });

  it.each(Object.keys(LINES) as LineName[])(
    'names the wrong field and suggests the schema’s in the first error of %s',
    (name) => {
      const first = result().diagnostics.find((d) => d.file === 'wrong.ts' && d.line === lineOf(name));
      expect(first, `no diagnostic at wrong.ts:${lineOf(name)}:\n${result().output}`).toBeDefined();
      expect(first?.head).toMatch(/'userID'/);
      expect(first?.head).toMatch(/Did you mean (to write )?'userId'\?/);
      expect(first?.text).not.toMatch(/No overload matches|NotAContract/);
    },
  );

  it('reports nothing in the wrong fixture but the wrong lines', () => {
    const lines = new Set(Object.keys(LINES).map((name) => lineOf(name as LineName)));
    expect(result().diagnostics.filter((d) => !lines.has(d.line))).toEqual([]);
  });
});
