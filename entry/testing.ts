/**
 * `leasehold/testing`: a database per test, jobs run in-process, enqueue assertions and a
 * clock the database's guards honour (docs/testing.md). Public API (docs/versioning.md).
 */
export * from '../testing/index.ts';
