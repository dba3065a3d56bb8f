/**
 * `npm run build:package` (and npm pack's prepack): emits the public entries (entry/*.ts), the
 * CLI and what they import into dist/ with tsc (tsconfig.build.json), removes the declaration
 * files no public entry reaches (scripts/package-declarations.ts), then copies the migrations
 * beside the code that applies them: db/migrate/files.ts finds them at
 * `<its folder>/../../drizzle`, which is dist/drizzle once built (from dist/db/migrate/).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from '../cli/database-select.ts';
import { pruneDeclarations } from './package-declarations.ts';

const dist = path.join(PROJECT_DIR, 'dist');
rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(path.join(PROJECT_DIR, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], {
  cwd: PROJECT_DIR,
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  console.error('build:package: tsc -p tsconfig.build.json failed');
  process.exit(1);
}
pruneDeclarations(dist);
const contracting = path.join(PROJECT_DIR, 'drizzle', 'contracting');
cpSync(path.join(PROJECT_DIR, 'drizzle'), path.join(dist, 'drizzle'), {
  recursive: true,
  // The runner reads the .sql files and meta/_journal.json; drizzle-kit's snapshots and the
  // contracting migrations of a later release (drizzle/contracting/README.md) stay here.
  filter: (source) =>
    !source.startsWith(contracting) &&
    (!source.includes(`${path.sep}meta${path.sep}`) || source.endsWith('_journal.json')),
});
const bin = path.join(dist, 'cli', 'main.js');
if (existsSync(bin)) chmodSync(bin, 0o755);
console.log(`build:package: wrote ${path.relative(PROJECT_DIR, dist)}/`);
