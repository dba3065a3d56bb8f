/**
 * One worker process on `DATABASE_URL`, serving the handlers its `--handlers` files export
 * (settings in workers/config.ts). What the failure harness, the tests and `npm start` spawn;
 * `npm run workers` goes through scripts/workers.ts and `leasehold workers` through
 * cli/workers.ts, which add their database policy. The process is workers/run-process.ts.
 * Without `DATABASE_URL` it refuses to start (exit code 2): it never picks a database itself.
 */
import { runWorkerProcess } from './run-process.ts';

process.exit(
  await runWorkerProcess(process.argv.slice(2), process.env, {
    embeddedHint: 'use npm run workers -- --embedded for the embedded development server',
  }),
);
