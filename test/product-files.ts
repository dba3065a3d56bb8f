/**
 * The product's source files, for the tests that scan them (test/state-writes.test.ts,
 * test/sql-splice.test.ts): every .ts and .tsx file of the folders that ship or run the product
 * (the package, the CLI, the dashboard, the demo, the npm entry points) and the root modules
 * Next.js loads, without tests, type tests and declarations. Paths are relative to the root,
 * with `/` separators. Read from the working tree, so a new file is scanned the day it appears.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The product's folders: what ships or runs as Leasehold (ARCHITECTURE.md's ownership table,
 * the size and cast rules of npm run lint). The one list: the tests and scripts/count-casts.ts
 * import it.
 */
export const PACKAGE_FOLDERS = ['app', 'components', 'lib', 'db', 'workers', 'cli', 'entry', 'testing'];

/** What the scans read besides: the demo and the npm entry points run product code too. */
export const PRODUCT_FOLDERS = [...PACKAGE_FOLDERS, 'demo', 'scripts'].sort();
export const PRODUCT_ROOT_FILES = ['instrumentation.ts', 'next.config.ts', 'proxy.ts'];

const SOURCE = /\.tsx?$/;
const NOT_PRODUCT = /(\.test|\.test-d|\.spec)\.tsx?$|\.d\.ts$/;

export function productFiles(): string[] {
  const files = PRODUCT_FOLDERS.flatMap((folder) =>
    readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && SOURCE.test(entry.name) && !NOT_PRODUCT.test(entry.name))
      .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/')),
  );
  return [...files, ...PRODUCT_ROOT_FILES].filter((f) => !f.includes('node_modules')).sort();
}

export function sourceOf(file: string): string {
  return readFileSync(path.join(ROOT, file), 'utf8');
}

/** The 1-based line of `index` in `text`. */
export function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}
