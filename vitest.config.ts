import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const INCLUDE = [
  'db/**/*.test.ts',
  'workers/**/*.test.ts',
  'lib/**/*.test.ts',
  'test/**/*.test.ts',
  'scripts/**/*.test.ts',
  'testing/**/*.test.ts',
  'cli/**/*.test.ts',
  'demo/**/*.test.ts',
  'chaos/**/*.test.ts',
  'bench/**/*.test.ts',
  'deploy/**/*.test.ts',
];
/** Test files whose assertions count the CPU time a process got: run alone, after the others. */
const ALONE = ['bench/server-cpu.test.ts'];

const resolve = {
  // lib/ starts with `import 'server-only'`, which throws outside Next.js's server bundles.
  alias: {
    'server-only': fileURLToPath(new URL('./test/server-only.ts', import.meta.url)),
    // The package's own name, as the demo and the consumer-style tests import it (tsconfig paths).
    'leasehold/worker': fileURLToPath(new URL('./entry/worker.ts', import.meta.url)),
    'leasehold/testing': fileURLToPath(new URL('./entry/testing.ts', import.meta.url)),
    leasehold: fileURLToPath(new URL('./entry/index.ts', import.meta.url)),
  },
};
// Each test file gets its own database cloned from a migrated template (test/db.ts).
// Each test starts with the dashboard's live cache empty (test/live-cache-reset.ts).
const shared = {
  pool: 'forks' as const,
  testTimeout: 60_000,
  hookTimeout: 60_000,
  setupFiles: ['./test/live-cache-reset.ts'],
};

export default defineConfig({
  resolve,
  test: {
    // Once for the whole run (both projects): the server and the template database.
    globalSetup: ['./test/global-setup.ts'],
    // vitest's default is one file at a time on a 2-core machine (cores - 1), where CI runs. The
    // files mostly wait (on PostgreSQL, child processes, timers), so two at a time: each file has
    // its own database, free ports and temporary folders, and the one test that fills a NOTIFY
    // queue starts a server of its own (test/notify-backpressure.test.ts). Files that measure
    // how much CPU a process got run after the rest, alone.
    projects: [
      {
        resolve,
        test: {
          ...shared,
          name: 'suite',
          include: INCLUDE,
          exclude: ['**/node_modules/**', ...ALONE],
          // Type tests (`*.test-d.ts`, expectTypeOf) run under `tsc` with every `vitest run`.
          typecheck: { enabled: true, include: ['db/**/*.test-d.ts', 'workers/**/*.test-d.ts'] },
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        resolve,
        test: { ...shared, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
