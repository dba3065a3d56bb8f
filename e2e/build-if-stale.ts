/** Runs `next build` when .next is missing or older than the sources (shared with npm start). */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PROJECT_DIR } from '../cli/database-select.ts';
import { buildIsStale } from '../cli/build-state.ts';

if (buildIsStale()) {
  const next = path.join(PROJECT_DIR, 'node_modules', 'next', 'dist', 'bin', 'next');
  const result = spawnSync(process.execPath, [next, 'build'], { cwd: PROJECT_DIR, stdio: 'inherit', env: process.env });
  process.exit(result.status ?? 1);
}
