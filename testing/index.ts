/**
 * `leasehold/testing`: a kit for an application's tests against its real PostgreSQL
 * (docs/testing.md). A database per test file with Leasehold's schema, jobs run in-process
 * through the worker's own execution and settlement, assertions on what a transaction enqueued,
 * and time control that the database's guards honour.
 */
export { createTestDatabase, createTemplateDatabase } from './database.ts';
export type { TestDatabase, TestDatabaseOptions, TemplateDatabase, TemplateOptions } from './database.ts';
export { runJob, drainQueue, JobNotRunnable } from './run.ts';
export type { JobRun, RunOptions, DrainOptions, DrainResult } from './run.ts';
export { enqueuedJobs, expectEnqueued, expectNotEnqueued, EnqueuedAssertionError } from './enqueued.ts';
export type { EnqueuedFilter } from './enqueued.ts';
export { advance, MAX_ADVANCE_MS } from './clock.ts';
export type { AdvanceResult } from './clock.ts';
