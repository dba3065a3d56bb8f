/**
 * The import boundaries hold: the fixtures of test/lint-boundaries/fixtures.ts are written into
 * scratch trees in the OS temp folder (never into the real tree; removed afterwards, pass or
 * fail) beside copies of .oxlintrc.json and scripts/lint-boundaries.json, and linted there by
 * the oxlint binary: a forbidden import exits 1 with its boundary's no-restricted-imports
 * message, an allowed one exits 0. No database is used. The boundary rules need no type
 * information, so oxlint runs without --type-aware.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOUNDARIES, buildBoundaryConfig, CONFIG_FILE } from '../scripts/lint-boundaries.ts';
import { ALLOWED, FORBIDDEN, type Fixture, sourceOf } from './lint-boundaries/fixtures.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OXLINT = path.join(ROOT, 'node_modules', 'oxlint', 'bin', 'oxlint');
const CONFIGS = ['.oxlintrc.json', path.relative(ROOT, CONFIG_FILE)];

interface Diagnostic {
  code: string;
  severity: string;
  message: string;
  help?: string;
  filename: string;
}

interface Result {
  /** oxlint's exit status for a run that linted this file alone (see result()). */
  status: number | null;
  stderr: string;
  /** This file's diagnostics. */
  diagnostics: Diagnostic[];
}

let scratch: string | undefined;
let trees = 0;
const batched = new Map<Fixture, Result & { alone: boolean }>();

/** Writes the fixtures (distinct paths) into a fresh tree and lints them in one oxlint run. */
function lintTree(fixtures: Fixture[]): Map<Fixture, Result & { alone: boolean }> {
  const dir = path.join(scratch!, String(trees++));
  for (const file of [...CONFIGS, ...fixtures.map((f) => f.file)]) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  }
  for (const config of CONFIGS) copyFileSync(path.join(ROOT, config), path.join(dir, config));
  for (const fixture of fixtures) writeFileSync(path.join(dir, fixture.file), sourceOf(fixture));
  const args = [OXLINT, '-c', '.oxlintrc.json', '-f', 'json', ...fixtures.map((f) => f.file)];
  const run = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8' });
  if (run.error) throw run.error;
  const { diagnostics } = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
  return new Map(
    fixtures.map((fixture) => [
      fixture,
      {
        status: run.status,
        stderr: run.stderr,
        diagnostics: diagnostics.filter((d) => path.normalize(d.filename) === path.normalize(fixture.file)),
        alone: fixtures.length === 1,
      },
    ]),
  );
}

/** As few trees as the paths allow (fixtures may share a path), so a green run costs ~10 oxlint runs. */
function lintBatched(fixtures: Fixture[]) {
  const groups: Fixture[][] = [];
  for (const fixture of fixtures) {
    const group = groups.find((g) => !g.some((f) => f.file === fixture.file));
    if (group) group.push(fixture);
    else groups.push([fixture]);
  }
  for (const group of groups) for (const [fixture, result] of lintTree(group)) batched.set(fixture, result);
}

/**
 * The batch run's status is this file's own when it is conclusive (a clean batch, or an error
 * in this very file); otherwise the file is linted again alone, so that one failing fixture
 * does not fail its batch-mates.
 */
function result(fixture: Fixture): Result {
  const batch = batched.get(fixture)!;
  const ownError = batch.diagnostics.some((d) => d.severity === 'error');
  if (batch.alone || batch.status === 0 || (batch.status === 1 && ownError)) return batch;
  return lintTree([fixture]).get(fixture)!;
}

beforeAll(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'leasehold-lint-'));
  lintBatched(FORBIDDEN.flatMap((arrow) => arrow.forbidden));
  lintBatched(ALLOWED.flatMap((folder) => folder.fixtures));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('import boundaries', () => {
  for (const arrow of FORBIDDEN) {
    describe(`forbidden: ${arrow.name}`, () => {
      it.each(arrow.forbidden)('$file importing $from', (fixture) => {
        const { status, diagnostics, stderr } = result(fixture);
        expect(diagnostics).toContainEqual(
          expect.objectContaining({
            code: 'eslint(no-restricted-imports)',
            severity: 'error',
            message: expect.stringContaining(`'${fixture.from}'`),
            help: expect.stringContaining(arrow.message),
          }),
        );
        expect(status, stderr).toBe(1);
      });
    });
  }

  for (const { folder, fixtures } of ALLOWED) {
    describe(`allowed in ${folder}/`, () => {
      it.each(fixtures)('$file importing $from', (fixture) => {
        const { status, diagnostics, stderr } = result(fixture);
        expect(diagnostics).toEqual([]);
        expect(status, stderr).toBe(0);
      });
    });
  }
});

describe('scripts/lint-boundaries.json', () => {
  it('is what scripts/lint-boundaries.ts generates (npm run lint:boundaries)', () => {
    expect(JSON.parse(readFileSync(CONFIG_FILE, 'utf8'))).toEqual(buildBoundaryConfig());
  });

  it('lets no product folder and not the demo import scripts/ (npm entry points and tooling)', () => {
    const product = ['app', 'components', 'lib', 'db', 'workers', 'cli', 'entry', 'testing', 'demo'];
    expect(BOUNDARIES.map((b) => b.folder).sort()).toEqual([...product].sort());
    const reaching = BOUNDARIES.filter((b) =>
      [...b.may, ...(b.testsMay ?? [])].some((m) => m === 'scripts' || m.startsWith('scripts/')),
    );
    expect(reaching.map((b) => b.folder)).toEqual([]);
  });

  it('has exact patterns for the depth of every file in the tree', () => {
    for (const { folder, maxDepth } of BOUNDARIES) {
      const files = readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
      const tooDeep = files.filter((file) => file.split(path.sep).length - 1 > maxDepth);
      expect(tooDeep, `${folder}/ maxDepth ${maxDepth}`).toEqual([]);
    }
  });
});
