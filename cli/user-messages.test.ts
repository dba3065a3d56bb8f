/**
 * What a package user can read names only what a package user has: the package's own commands
 * (`npx leasehold …`) and files the package ships (docs/…), never this repository's `npm run`
 * scripts or its TypeScript sources. The messages are the string and template literals of every
 * file the package runs (the code dist/ is built from: entry/, cli/ and what they import; the
 * dashboard's sources, which ship as they are), comments and import specifiers left out. Every
 * other path they name, and every relative link of the README, must be in `npm pack`'s list.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../test/cli.ts';

const SOURCE = /\.(ts|tsx)$/;
const TEST = /\.test(-d)?\.tsx?$/;

function filesUnder(folder: string): string[] {
  const dir = path.join(ROOT, folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => path.join(folder, f))
    .filter((f) => SOURCE.test(f) && !TEST.test(f) && statSync(path.join(ROOT, f)).isFile());
}

/** The relative imports of a source file, as files of this checkout. */
function importsOf(file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = path.normalize(path.join(path.dirname(file), m[1]!));
    if (existsSync(path.join(ROOT, target))) found.push(target);
  }
  return found;
}

/** Every source file the package runs: dist/'s entries and their imports, and the dashboard's sources. */
export function packagedSources(): string[] {
  const roots = [
    ...filesUnder('entry'),
    ...filesUnder('cli'),
    'workers/isolated-entry.ts',
    ...filesUnder('app'),
    ...filesUnder('components'),
    ...filesUnder('lib'),
    'next.config.ts',
    'instrumentation.ts',
    'proxy.ts',
  ];
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file) || TEST.test(file)) continue;
    seen.add(file);
    queue.push(...importsOf(file, readFileSync(path.join(ROOT, file), 'utf8')));
  }
  return [...seen].sort();
}

/** The index of the quote that ends the string literal opening at `start`. */
function quoteEnd(text: string, start: number): number {
  let j = start + 1;
  while (j < text.length && text[j] !== text[start]) j += text[j] === '\\' ? 2 : 1;
  return j;
}

/** The index of the backtick that ends the template literal opening at `start`, past any `${…}` in it. */
function templateEnd(text: string, start: number): number {
  let j = start + 1;
  while (j < text.length && text[j] !== '`') {
    if (text[j] === '\\') j += 2;
    else if (text[j] === '$' && text[j + 1] === '{') {
      let depth = 1;
      j += 2;
      while (j < text.length && depth > 0) {
        const d = text[j]!;
        if (d === '{') depth++;
        else if (d === '}') depth--;
        else if (d === "'" || d === '"') j = quoteEnd(text, j);
        else if (d === '`') j = templateEnd(text, j);
        j++;
      }
    } else j++;
  }
  return j;
}

/** The string and template literals of `text`, without comments, regular expressions' neighbours or import specifiers. */
export function literalsOf(text: string): string[] {
  const literals: string[] = [];
  let i = 0;
  let previous = '';
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      i = text.indexOf('\n', i);
      if (i === -1) break;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
      continue;
    }
    if (c === '/' && /[(,=:[!&|?{};]|^$|return$/.test(previous)) {
      // A regular expression literal: skipped (its source is no message).
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n') {
        if (text[j] === '\\') j += 2;
        else if (text[j] === '[' || text[j] === ']') {
          inClass = text[j] === '[';
          j++;
        } else if (text[j] === '/' && !inClass) break;
        else j++;
      }
      i = j + 1;
      previous = 'x';
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      const j = c === '`' ? templateEnd(text, i) : quoteEnd(text, i);
      const body = text.slice(i + 1, j);
      const before = text.slice(Math.max(0, i - 12), i);
      // Import specifiers and SQL (its comments name this repository's files) are no messages.
      if (!/(from\s*|import\s*\(\s*|import\s+|resolve\(\s*|sql(\.raw\()?)$/.test(before)) literals.push(body);
      i = j + 1;
      previous = 'x';
      continue;
    }
    if (!/\s/.test(c)) {
      const word = /^[A-Za-z_$][\w$]*/.exec(text.slice(i))?.[0];
      if (word) {
        previous = word === 'return' || word === 'typeof' ? 'return' : 'x';
        i += word.length;
        continue;
      }
      previous = c;
    }
    i++;
  }
  return literals;
}

/** The file paths a text names (`docs/cli.md`, `workers/config.ts`), URLs left out. */
export function pathsIn(text: string): string[] {
  const withoutUrls = text.replace(/[a-z]+:\/\/\S+/g, ' ');
  return [...withoutUrls.matchAll(/(?<![\w./@-])((?:\.\/)?[\w-]+(?:\/[\w.-]+)+\.(?:tsx?|mjs|cjs|js|md|sql|json))\b/g)]
    .map((m) => m[1]!.replace(/^\.\//, ''))
    .filter((p) => !p.endsWith('/package.json')); // a package's manifest, resolved from node_modules
}

/** `npm pack --dry-run`'s file list (scripts not run: dist/ is not needed for this check). */
function packedFiles(): string[] {
  const result = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_'))) as NodeJS.ProcessEnv,
  });
  expect(result.status, result.stderr).toBe(0);
  const [info] = JSON.parse(result.stdout.slice(result.stdout.indexOf('['))) as { files: { path: string }[] }[];
  return info!.files.map((f) => f.path);
}

const isPacked = (files: string[], p: string) => files.some((f) => f === p || f.endsWith(`/${p}`));

/** What npm pack's prepack adds (scripts/build-package.ts): the migrations, copied to dist/drizzle. */
const BUILT = ['dist/drizzle/meta/_journal.json'];

describe('what a package user reads', () => {
  it('finds the messages: a known sentence of the CLI and of the worker is collected', () => {
    const sources = packagedSources();
    expect(sources).toEqual(expect.arrayContaining(['cli/run.ts', 'workers/run-process.ts', 'db/schema-version.ts']));
    const all = sources.flatMap((f) => literalsOf(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(all.some((l) => l.includes('docs/cli.md has the whole story'))).toBe(true);
    expect(all.some((l) => l.includes('worker could not start'))).toBe(true);
    expect(literalsOf("import { a } from '../x/y.ts';\n// npm run no\nconst s = 'npm run yes';")).toEqual([
      'npm run yes',
    ]);
  });

  it('names no npm run script and no TypeScript source of this repository in any message', () => {
    const offences: string[] = [];
    for (const file of packagedSources()) {
      for (const literal of literalsOf(readFileSync(path.join(ROOT, file), 'utf8'))) {
        if (/\bnpm run\b/.test(literal)) offences.push(`${file}: ${JSON.stringify(literal.slice(0, 160))}`);
        for (const named of pathsIn(literal))
          if (/\.tsx?$/.test(named)) offences.push(`${file}: names ${named}: ${JSON.stringify(literal.slice(0, 160))}`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('ships every file a message or the README names (npm pack --dry-run)', () => {
    const packed = [...packedFiles(), ...BUILT];
    const missing: string[] = [];
    for (const file of packagedSources())
      for (const literal of literalsOf(readFileSync(path.join(ROOT, file), 'utf8')))
        for (const named of pathsIn(literal))
          if (!/\.tsx?$/.test(named) && !isPacked(packed, named)) missing.push(`${file}: ${named}`);
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#:\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links).toContain('docs/quickstart.md');
    for (const link of links) if (!isPacked(packed, link)) missing.push(`README.md: ${link}`);
    expect(missing).toEqual([]);
  }, 60_000);
});
