import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // lib/ starts with `import 'server-only'`, which throws outside Next.js's server bundles.
    alias: { 'server-only': fileURLToPath(new URL('./test/server-only.ts', import.meta.url)) },
  },
  test: {
    include: [
      'db/**/*.test.ts',
      'workers/**/*.test.ts',
      'lib/**/*.test.ts',
      'test/**/*.test.ts',
      'scripts/**/*.test.ts',
      'cli/**/*.test.ts',
    ],
    globalSetup: ['./test/global-setup.ts'],
    // Each test file gets its own database cloned from a migrated template (test/db.ts).
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
