/** Whether the dashboard's production build (.next) is missing or older than its sources. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from './database.ts';

export function buildIsStale(): boolean {
  const marker = path.join(PROJECT_DIR, '.next', 'BUILD_ID');
  if (!existsSync(marker)) return true;
  const built = statSync(marker).mtimeMs;
  const newer = (dir: string): boolean =>
    existsSync(dir) &&
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? newer(full) : statSync(full).mtimeMs > built;
    });
  return (
    ['app', 'components', 'lib', 'db'].some((d) => newer(path.join(PROJECT_DIR, d))) ||
    ['next.config.ts', 'package-lock.json', 'tsconfig.json'].some(
      (f) => existsSync(path.join(PROJECT_DIR, f)) && statSync(path.join(PROJECT_DIR, f)).mtimeMs > built,
    )
  );
}
