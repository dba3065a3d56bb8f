/**
 * `npm run user:add -- --email ops@example.com --role operator [--password …] [--enable]`:
 * `leasehold users add` (cli/users.ts) from this checkout. Creates a dashboard user or updates
 * their role and password; a disabled user stays disabled unless `--enable`. Without
 * --password one is generated and printed once. The demo password is refused outside demo
 * mode. DATABASE_URL names the database (`--embedded`: the embedded development server).
 */
import { parseArgs } from 'node:util';
import { runCli } from '../cli/run.ts';

let values;
try {
  ({ values } = parseArgs({
    options: {
      email: { type: 'string' },
      role: { type: 'string' },
      password: { type: 'string' },
      enable: { type: 'boolean' },
      embedded: { type: 'boolean' },
    },
  }));
} catch (error) {
  console.error(`user:add: ${(error as Error).message}`);
  process.exit(2);
}
if (!values.email || !values.role) {
  console.error(
    'usage: npm run user:add -- --email someone@example.com --role viewer|operator|admin [--password …] [--enable] [--embedded]',
  );
  process.exit(2);
}
process.exitCode = await runCli([
  'users',
  'add',
  values.email,
  '--role',
  values.role,
  ...(values.password === undefined ? [] : ['--password', values.password]),
  ...(values.enable ? ['--enable'] : []),
  ...(values.embedded ? ['--embedded'] : []),
]);
