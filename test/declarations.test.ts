/**
 * The package's declaration files as `npm run build:package` ships them (scripts/package-declarations.ts:
 * tsc's declarations for tsconfig.build.json, pruned to what the public entries reach), emitted
 * into a scratch folder under .leasehold/ and read as text. A user's compiler reads every one of
 * them with skipLibCheck: false, and with it every package they import: so none may import
 * drizzle-orm (whose own declarations fail for a program without its optional drivers), and
 * each package they do import must be a dependency that brings its types (itself or `@types/…`).
 * And a program importing the entries compiles against them with skipLibCheck: false (this
 * checkout's node_modules standing in for the dependencies; test/package/declarations-check.ts
 * compiles the same program against the packed tarball with nothing else installed).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DIR } from '../cli/database-select.ts';
import {
  allDeclarations,
  declarationImports,
  emitDeclarations,
  entryDeclarations,
  packageOf,
} from '../scripts/package-declarations.ts';
import { DECLARATIONS_COMPILER_OPTIONS, DECLARATIONS_PROGRAM } from './package/declarations-check.ts';
import { ENTRIES } from './entry-names.ts';

const manifest = JSON.parse(readFileSync(path.join(PROJECT_DIR, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

let dist = '';
/** Each shipped declaration file (relative to dist/) with the bare specifiers it imports. */
const imports = new Map<string, string[]>();

beforeAll(() => {
  mkdirSync(path.join(PROJECT_DIR, '.leasehold'), { recursive: true });
  dist = mkdtempSync(path.join(PROJECT_DIR, '.leasehold', 'declarations-'));
  emitDeclarations(dist);
  for (const file of allDeclarations(dist)) {
    const specifiers = declarationImports(readFileSync(path.join(dist, file), 'utf8'));
    imports.set(
      file,
      specifiers.filter((s) => !s.startsWith('.')),
    );
  }
}, 120_000);

afterAll(() => {
  if (dist) rmSync(dist, { recursive: true, force: true });
});

/** Whether an installed package brings its own declarations (package.json `types`, `typings` or an exports `types`). */
function bringsTypes(name: string): boolean {
  const file = path.join(PROJECT_DIR, 'node_modules', name, 'package.json');
  if (!existsSync(file)) return false;
  const json = readFileSync(file, 'utf8');
  const parsed = JSON.parse(json) as { types?: string; typings?: string };
  return Boolean(parsed.types || parsed.typings) || /"types"\s*:/.test(json);
}

describe('the shipped declaration files', () => {
  it('include every entry package.json names', () => {
    const shipped = [...imports.keys()];
    expect(entryDeclarations().length).toBeGreaterThan(0);
    for (const entry of entryDeclarations()) expect(shipped).toContain(entry);
  });

  it('import nothing from drizzle-orm', () => {
    const drizzle = [...imports]
      .map(([file, specifiers]) => [file, specifiers.filter((s) => packageOf(s) === 'drizzle-orm')] as const)
      .filter(([, specifiers]) => specifiers.length > 0)
      .map(([file, specifiers]) => `${file}: ${specifiers.join(', ')}`);
    expect(drizzle).toEqual([]);
  });

  it('import only Node built-ins and dependencies that bring their types', () => {
    const builtins = new Set(builtinModules);
    const wrong: string[] = [];
    for (const [file, specifiers] of imports) {
      for (const specifier of specifiers) {
        // Node's own modules are typed by @types/node, the peer a TypeScript project on Node has.
        if (specifier.startsWith('node:') || builtins.has(specifier) || specifier === 'node') continue;
        const name = packageOf(specifier);
        const typesPackage = `@types/${name.replace(/^@/, '').replace('/', '__')}`;
        if (!(name in manifest.dependencies)) wrong.push(`${file}: ${specifier} (not a dependency)`);
        else if (!bringsTypes(name) && !(typesPackage in manifest.dependencies))
          wrong.push(`${file}: ${specifier} (its types, ${typesPackage}, are not a dependency)`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('compile with a program that imports the entries, skipLibCheck: false', () => {
    const program = path.join(dist, 'program');
    mkdirSync(program);
    writeFileSync(path.join(program, 'app.ts'), DECLARATIONS_PROGRAM);
    // Every pinned public name, value or type, must be in the shipped declarations: an
    // `@internal` tag on one would strip it (TS2305 here).
    writeFileSync(
      path.join(program, 'names.ts'),
      (['index', 'worker', 'testing'] as const)
        .map((entry) => {
          const names = [...ENTRIES[entry].values, ...ENTRIES[entry].types].sort();
          const from = entry === 'index' ? 'leasehold' : `leasehold/${entry}`;
          return `export type { ${names.join(', ')} } from '${from}';\n`;
        })
        .join(''),
    );
    const entries: Record<string, string[]> = {
      leasehold: [path.join(dist, 'entry', 'index.d.ts')],
      'leasehold/worker': [path.join(dist, 'entry', 'worker.d.ts')],
      'leasehold/testing': [path.join(dist, 'entry', 'testing.d.ts')],
    };
    writeFileSync(
      path.join(program, 'tsconfig.json'),
      JSON.stringify({
        // Only @types/node of this checkout's many @types: the others are the dashboard's.
        compilerOptions: { ...DECLARATIONS_COMPILER_OPTIONS, types: ['node'], paths: entries },
        files: ['app.ts', 'names.ts'],
      }),
    );
    const tsc = spawnSync(
      process.execPath,
      [
        path.join(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        program,
        '--pretty',
        'false',
        '--listFiles',
      ],
      { cwd: program, encoding: 'utf8' },
    );
    const output = `${tsc.stdout}${tsc.stderr}`;
    expect(output.split('\n').filter((line) => / error TS\d+:/.test(line))).toEqual([]);
    expect(output.split('\n').filter((line) => line.includes('/node_modules/drizzle-orm/'))).toEqual([]);
    expect(tsc.status).toBe(0);
  });
});
