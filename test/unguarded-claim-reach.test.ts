/**
 * The failure harness's guard-skipping claim (db/queue/transitions/unguarded-claim.ts) is a
 * transition only the repository's sources reach (issue 34, item 2): the package build
 * (tsconfig.build.json, as `npm run build:package` runs it) emits no such module, `npm pack`
 * leaves its source out, and the built `leasehold workers` refuses
 * LEASEHOLD_FAILPOINTS=unguarded_claim with a sentence and exit code 2, before it loads a
 * handler or connects. workers/failpoints.test.ts proves a worker from the sources loads it;
 * `npx tsx chaos/run.ts --self-test` that the harness still catches it there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DIR } from '../cli/database-select.ts';
import { UNGUARDED_CLAIM_ABSENT } from '../workers/failpoints.ts';

const SOURCE = 'db/queue/transitions/unguarded-claim.ts';
let built = '';

beforeAll(() => {
  mkdirSync(path.join(PROJECT_DIR, '.leasehold'), { recursive: true });
  // Under the checkout, so that the built files find its node_modules as an install would its own.
  built = mkdtempSync(path.join(PROJECT_DIR, '.leasehold', 'built-'));
  const tsc = spawnSync(
    path.join(PROJECT_DIR, 'node_modules', '.bin', 'tsc'),
    [
      '-p',
      'tsconfig.build.json',
      '--outDir',
      built,
      '--declaration',
      'false',
      '--declarationMap',
      'false',
      '--sourceMap',
      'false',
    ],
    { cwd: PROJECT_DIR, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed:\n${tsc.stdout}${tsc.stderr}`);
  writeFileSync(path.join(built, 'handlers.mjs'), 'export const handlers = [];\n');
}, 120_000);

afterAll(() => {
  if (built) rmSync(built, { recursive: true, force: true });
});

/** `leasehold workers` as built, on a database nothing listens on: only a start-up refusal ends it. */
function builtWorkers(failpoints: string, handlers: string) {
  return spawnSync(process.execPath, [path.join(built, 'cli', 'main.js'), 'workers', '--handlers', handlers], {
    cwd: built,
    encoding: 'utf8',
    timeout: 30_000,
    env: {
      ...process.env,
      DATABASE_URL: 'postgres://leasehold@127.0.0.1:9/nothing',
      LEASEHOLD_FAILPOINTS: failpoints,
    },
  });
}

describe('the guard-skipping claim, from the installed package', () => {
  it('is not in the package build, whose worker would load it', () => {
    const files = readdirSync(built, { recursive: true, encoding: 'utf8' });
    expect(files.filter((f) => f.includes('unguarded-claim'))).toEqual([]);
    expect(existsSync(path.join(built, 'workers', 'failpoints.js'))).toBe(true);
    expect(existsSync(path.join(built, 'db', 'queue', 'transitions', 'claim.js'))).toBe(true);
  });

  it("is not in npm pack's file list", () => {
    const packed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: PROJECT_DIR,
      encoding: 'utf8',
    });
    expect(packed.status, packed.stderr).toBe(0);
    const [{ files }] = JSON.parse(packed.stdout) as [{ files: { path: string }[] }];
    // dist/ is whatever the last build left here (npm pack's prepack builds it afresh): the test above covers it.
    const paths = files.map((f) => f.path).filter((p) => !p.startsWith('dist/'));
    expect(paths).toContain('db/queue/transitions/claim.ts');
    expect(paths).not.toContain(SOURCE);
  });

  it('makes the built worker refuse LEASEHOLD_FAILPOINTS=unguarded_claim with a sentence (exit code 2)', () => {
    const refused = builtWorkers('unguarded_claim', './handlers.mjs');
    expect(refused.status, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`leasehold workers: ${UNGUARDED_CLAIM_ABSENT}`);
    // A crash point passes the same check: this worker goes on to its handler files.
    const crash = builtWorkers('after_claim:0', './missing.mjs');
    expect(crash.status, crash.stderr).toBe(2);
    expect(crash.stderr).toContain('--handlers ./missing.mjs: no such file');
    expect(crash.stderr).not.toContain('unguarded_claim');
  });
});
