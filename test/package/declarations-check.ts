/**
 * The published declarations stand alone (issue 31): a correct TypeScript program that imports
 * the three entries compiles with `skipLibCheck: false` in a project that has installed only the
 * packed tarball and a compiler, so the only declarations it reads are the package's own and
 * those of what the package itself brings (its dependencies: `@types/pg`, and through it
 * `@types/node`). No `@types/pg` of the app's, no drizzle-orm file in the program: the check
 * fails on any diagnostic, and on any drizzle-orm declaration tsc lists as part of the program.
 *
 * Under the repository's TypeScript (7) and TypeScript 5.9 (the 5.x users still run most; the
 * peer range is >=5.1), installed side by side in the scratch project through an npm alias.
 * test/declarations.test.ts holds the declaration files to the same rules, without packing.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from '../../cli/database-select.ts';
import { log, run, scratchFolder } from './common.ts';

const TYPESCRIPT_5 = '5.9.3';

/** The program: the entries' main functions and types used as an application and its tests would. */
export const DECLARATIONS_PROGRAM = `import {
  claim,
  completeIfLeaseHeld,
  defineJob,
  enqueue,
  enqueueMany,
  type Executor,
  fromKysely,
  migrateDatabase,
  retryIfTerminal,
  type StandardSchemaV1,
} from 'leasehold';
import { advance, createTestDatabase, drainQueue, expectEnqueued, runJob } from 'leasehold/testing';
import { createWorker, defineHandler, type LeaseholdWorker, TransientError } from 'leasehold/worker';

declare const schema: StandardSchemaV1<{ userId: number; email: string }>;
export const welcomeJob = defineJob({ kind: 'welcome.send', version: 1, queue: 'mail', schema });
export const welcomeHandler = defineHandler(welcomeJob, async ({ payload }) => {
  if (!payload.email.includes('@')) throw new TransientError('no address yet');
});

export async function signUp(tx: Executor, userId: number): Promise<string> {
  const { id } = await enqueue(tx, welcomeJob, { userId, email: 'ada@example.com' });
  await enqueueMany(tx, welcomeJob, [{ userId: userId + 1, email: 'bob@example.com' }]);
  return id;
}

export async function ownLoop(tx: Executor): Promise<void> {
  for (const job of await claim(tx, { queues: ['mail'], workerId: 'mine', limit: 10 })) {
    await completeIfLeaseHeld(tx, job);
  }
}

export async function startWorker(connectionString: string): Promise<LeaseholdWorker> {
  await migrateDatabase(connectionString);
  return createWorker({ connectionString, jobs: [welcomeHandler] });
}

export async function inATest(connectionString: string): Promise<void> {
  const t = await createTestDatabase({ connectionString });
  try {
    const id = await t.db.transaction((tx) => signUp(tx, 1));
    await expectEnqueued(t.db, { kind: 'welcome.send' });
    await advance(t.db, 60_000);
    await runJob(t.db, [welcomeHandler], id);
    await drainQueue(t.pool, { handlers: [welcomeHandler] });
    await retryIfTerminal(t.pool, { id, actor: 'test' });
  } finally {
    await t.drop();
  }
}

export const kysely = fromKysely;
`;

/** What a new project's tsconfig says, with the library check on. */
export const DECLARATIONS_COMPILER_OPTIONS = {
  target: 'ES2022',
  module: 'nodenext',
  moduleResolution: 'nodenext',
  strict: true,
  noEmit: true,
  skipLibCheck: false,
};

/**
 * Installs `tarball` and the compilers into a scratch project and compiles DECLARATIONS_PROGRAM
 * under each; throws with tsc's output on any diagnostic or drizzle-orm file in the program.
 */
export function checkDeclarations(tarball: string, options: { keep?: boolean } = {}): void {
  const t0 = Date.now();
  const project = scratchFolder('declarations');
  try {
    writeFileSync(
      path.join(project, 'package.json'),
      `${JSON.stringify({ name: 'declarations-check', private: true, type: 'module' }, null, 2)}\n`,
    );
    const ours = (
      JSON.parse(readFileSync(path.join(PROJECT_DIR, 'node_modules', 'typescript', 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        tarball,
        `typescript@${ours}`,
        `typescript5@npm:typescript@${TYPESCRIPT_5}`,
      ],
      { cwd: project },
    );
    writeFileSync(path.join(project, 'app.ts'), DECLARATIONS_PROGRAM);
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      `${JSON.stringify({ compilerOptions: DECLARATIONS_COMPILER_OPTIONS, files: ['app.ts'] }, null, 2)}\n`,
    );
    for (const compiler of ['typescript', 'typescript5']) {
      const tsc = path.join(project, 'node_modules', compiler, 'bin', 'tsc');
      const version = run(process.execPath, [tsc, '--version'], { cwd: project }).stdout.trim();
      const result = run(process.execPath, [tsc, '-p', '.', '--pretty', 'false', '--listFiles'], {
        cwd: project,
        accept: [0, 1, 2],
      });
      const diagnostics = result.stdout.split('\n').filter((line) => /\): error TS\d+:/.test(line));
      const drizzle = result.stdout.split('\n').filter((line) => line.includes('/node_modules/drizzle-orm/'));
      if (result.status !== 0 || diagnostics.length > 0 || drizzle.length > 0) {
        throw new Error(
          `the declarations do not stand alone under ${version} (skipLibCheck: false): ` +
            `${diagnostics.length} diagnostics, ${drizzle.length} drizzle-orm files in the program\n` +
            `${diagnostics.slice(0, 40).join('\n')}\n${drizzle.slice(0, 5).join('\n')}`,
        );
      }
    }
    log(
      `declarations: a program compiles with skipLibCheck: false under TypeScript ${ours} and ${TYPESCRIPT_5}, ` +
        `with only the tarball installed (${Math.round((Date.now() - t0) / 1000)} s)`,
    );
  } finally {
    if (!options.keep) rmSync(project, { recursive: true, force: true });
  }
}

/**
 * What the package's `@types/…` dependencies (`@types/pg`, there because the declarations name
 * `pg.Pool`) install into `project` as their own dependencies: `@types/node`, which the
 * declarations need as well. Such a package arriving in a worker-only install is the types',
 * not the dashboard's.
 */
export function broughtByTypes(project: string): string[] {
  const manifest = JSON.parse(
    readFileSync(path.join(project, 'node_modules', 'leasehold', 'package.json'), 'utf8'),
  ) as { dependencies?: Record<string, string> };
  return Object.keys(manifest.dependencies ?? {})
    .filter((name) => name.startsWith('@types/'))
    .flatMap((name) => {
      const own = JSON.parse(readFileSync(path.join(project, 'node_modules', name, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      return Object.keys(own.dependencies ?? {});
    });
}
