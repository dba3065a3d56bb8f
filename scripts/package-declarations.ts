/**
 * The package's declaration files: what `npm run build:package` keeps of tsc's .d.ts output, and
 * what test/declarations.test.ts reads. tsc emits a declaration for every module the build
 * compiles (the CLI, the dashboard's queries, the Drizzle schema); only those the public entries
 * reach (package.json `exports`, `types`) are part of the package's types, and the others are
 * removed, so no file is shipped that a user's compiler would read with imports the package
 * does not stand behind (drizzle-orm above all: docs/versioning.md, "Module format").
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from '../cli/database-select.ts';

interface Manifest {
  exports: Record<string, string | { types?: string }>;
  dependencies?: Record<string, string>;
}

function manifest(): Manifest {
  return JSON.parse(readFileSync(path.join(PROJECT_DIR, 'package.json'), 'utf8')) as Manifest;
}

/** The entries' declaration files, relative to dist/ (`entry/index.d.ts`, …), from package.json. */
export function entryDeclarations(): string[] {
  const entries: string[] = [];
  for (const target of Object.values(manifest().exports)) {
    if (typeof target === 'object' && target.types) entries.push(path.relative('dist', path.normalize(target.types)));
  }
  return entries;
}

/**
 * The module specifiers a declaration file names: `import … from`, `export … from`,
 * `import("…")` types, `import "…"` and `/// <reference types="…" />`. Comments are skipped, so
 * a doc comment that names a package is not an import.
 */
export function declarationImports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/(?!\/\s*<reference).*$/gm, '');
  const found = new Set<string>();
  const patterns = [
    /\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\/\/\/\s*<reference\s+types\s*=\s*['"]([^'"]+)['"]/g,
  ];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) if (match[1]) found.add(match[1]);
  return [...found];
}

/** The package a bare specifier names (`drizzle-orm/pg-core` → `drizzle-orm`, `@a/b/c` → `@a/b`). */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** Every .d.ts under `dist`, relative to it. */
export function allDeclarations(dist: string): string[] {
  const found: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(path.join(dist, folder), { withFileTypes: true })) {
      const relative = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.d.ts')) found.push(relative);
    }
  };
  walk('');
  return found.sort();
}

/** The file a relative specifier in a declaration file resolves to (`./x.ts` and `./x.js` → `x.d.ts`). */
function resolveRelative(from: string, specifier: string): string {
  return path.join(path.dirname(from), specifier.replace(/\.(?:[cm]?ts|[cm]?js)$/, '').concat('.d.ts'));
}

/**
 * The declaration files the entries reach through relative imports, relative to `dist`. A
 * relative import that names no file throws: the build would ship a declaration that fails.
 */
export function reachableDeclarations(dist: string): Set<string> {
  const reached = new Set<string>();
  const pending = entryDeclarations();
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (reached.has(file)) continue;
    if (!existsSync(path.join(dist, file))) throw new Error(`declarations: ${file} is named but was not emitted`);
    reached.add(file);
    for (const specifier of declarationImports(readFileSync(path.join(dist, file), 'utf8'))) {
      if (specifier.startsWith('.')) pending.push(resolveRelative(file, specifier));
    }
  }
  return reached;
}

/** Removes the .d.ts files (and their .d.ts.map) the entries do not reach; returns what it removed. */
export function pruneDeclarations(dist: string): string[] {
  const reached = reachableDeclarations(dist);
  const removed = allDeclarations(dist).filter((file) => !reached.has(file));
  for (const file of removed) {
    rmSync(path.join(dist, file));
    rmSync(path.join(dist, `${file}.map`), { force: true });
  }
  return removed;
}

/** Emits the package build's declarations alone (tsconfig.build.json) into `outDir`, then prunes them. */
export function emitDeclarations(outDir: string): void {
  const tsc = spawnSync(
    path.join(PROJECT_DIR, 'node_modules', '.bin', 'tsc'),
    ['-p', 'tsconfig.build.json', '--emitDeclarationOnly', '--declarationMap', 'false', '--outDir', outDir],
    { cwd: PROJECT_DIR, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed:\n${tsc.stdout}${tsc.stderr}`);
  pruneDeclarations(outDir);
}
