/**
 * The testing kit's examples (docs/examples/testing-vitest, docs/examples/testing-jest) run as a
 * user's project would run them: copied into a scratch folder outside this checkout, their
 * `leasehold` dependency pointed at the packed tarball (the one rewrite, printed), installed,
 * and `npm test` against a PostgreSQL whose user may CREATE DATABASE (each test file makes its
 * own with createTestDatabase).
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { PROJECT_DIR } from '../../cli/database-select.ts';
import { eachNodeVersion, log, run, scratchFolder } from './common.ts';

const EXAMPLES = ['testing-vitest', 'testing-jest'];

await eachNodeVersion(async (major, { node, packed, serverUrl, keep }) => {
  for (const example of EXAMPLES) {
    const t0 = Date.now();
    const project = scratchFolder(`${example}-node${major}`);
    try {
      cpSync(path.join(PROJECT_DIR, 'docs', 'examples', example), project, { recursive: true });
      const manifestFile = path.join(project, 'package.json');
      const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { dependencies: Record<string, string> };
      log(`node ${major}, ${example}: "leasehold": "${manifest.dependencies.leasehold}" → file:${packed.file}`);
      manifest.dependencies.leasehold = `file:${packed.file}`;
      writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
      run('npm', ['install', '--no-audit', '--no-fund'], { cwd: project, node });
      const result = run('npm', ['test'], { cwd: project, node, env: { DATABASE_URL: serverUrl } });
      const summary = stripVTControlCharacters(`${result.stdout}\n${result.stderr}`)
        .split('\n')
        .filter((line) => /Tests?:|passed|failed/.test(line))
        .slice(-3)
        .join(' | ');
      log(`node ${major}, ${example}: passed in ${Math.round((Date.now() - t0) / 1000)} s (${summary.trim()})`);
    } finally {
      if (!keep) rmSync(project, { recursive: true, force: true });
    }
  }
});
