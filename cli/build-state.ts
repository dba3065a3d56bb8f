/**
 * Whether the dashboard's production build is missing or older than its sources: the repo's own
 * `.next` (npm start, the e2e), and the copy `leasehold dashboard` builds (cli/dashboard.ts).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from './database-select.ts';

/** The dashboard's sources, relative to the package root: what a build depends on and what the CLI copies. */
export const DASHBOARD_SOURCE_DIRS = ['app', 'components', 'lib', 'db'] as const;
export const DASHBOARD_SOURCE_FILES = ['next.config.ts', 'instrumentation.ts', 'proxy.ts', 'tsconfig.json'] as const;

/**
 * True when `buildDir/.next/BUILD_ID` is missing or older than a source under `sourceDir` (or
 * the lockfile there). Both default to this checkout.
 */
export function buildIsStale(buildDir: string = PROJECT_DIR, sourceDir: string = PROJECT_DIR): boolean {
  const marker = path.join(buildDir, '.next', 'BUILD_ID');
  if (!existsSync(marker)) return true;
  const built = statSync(marker).mtimeMs;
  const newer = (dir: string): boolean =>
    existsSync(dir) &&
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? newer(full) : statSync(full).mtimeMs > built;
    });
  return (
    DASHBOARD_SOURCE_DIRS.some((d) => newer(path.join(sourceDir, d))) ||
    [...DASHBOARD_SOURCE_FILES, 'package-lock.json'].some(
      (f) => existsSync(path.join(sourceDir, f)) && statSync(path.join(sourceDir, f)).mtimeMs > built,
    )
  );
}
