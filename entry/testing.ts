/**
 * `leasehold/testing`: a database per test, jobs run in-process, enqueue assertions and a
 * clock the database's guards honour (docs/testing.md). Public API (docs/versioning.md): an
 * explicit list, as the other entries are, so a name exported by testing/ is public only when
 * it is named here (test/entry-exports.test.ts pins the names).
 */
export {
  createTestDatabase,
  createTemplateDatabase,
  runJob,
  drainQueue,
  JobNotRunnable,
  enqueuedJobs,
  expectEnqueued,
  expectNotEnqueued,
  EnqueuedAssertionError,
  advance,
  MAX_ADVANCE_MS,
} from '../testing/index.ts';
export type {
  TestDatabase,
  TestDatabaseOptions,
  TemplateDatabase,
  TemplateOptions,
  JobRun,
  RunOptions,
  DrainOptions,
  DrainResult,
  EnqueuedFilter,
  AdvanceResult,
} from '../testing/index.ts';
