import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // lib/ starts with `import 'server-only'`, which throws outside Next.js's server bundles.
    alias: {
      'server-only': fileURLToPath(new URL('./test/server-only.ts', import.meta.url)),
      // The package's own name, as the demo and the consumer-style tests import it (tsconfig paths).
      'leasehold/worker': fileURLToPath(new URL('./entry/worker.ts', import.meta.url)),
      'leasehold/testing': fileURLToPath(new URL('./entry/testing.ts', import.meta.url)),
      leasehold: fileURLToPath(new URL('./entry/index.ts', import.meta.url)),
    },
  },
  test: {
    include: [
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
    ],
    // Type tests (`*.test-d.ts`, expectTypeOf) run under `tsc` with every `vitest run`.
    typecheck: { enabled: true, include: ['db/**/*.test-d.ts', 'workers/**/*.test-d.ts'] },
    globalSetup: ['./test/global-setup.ts'],
    // Each test file gets its own database cloned from a migrated template (test/db.ts).
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
