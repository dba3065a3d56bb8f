/**
 * `npm run user:add -- --email ops@example.com --role operator [--password-prompt | --password-stdin] [--enable]`:
 * `leasehold users add` (cli/users.ts) from this checkout. Creates a dashboard user or updates
 * their role and password; a disabled user stays disabled unless `--enable`. The password is
 * typed at a prompt or piped in, never an argument (`--password …` is refused with the
 * sentence that says so); without either, one is generated and printed once. The demo password
 * is refused outside demo mode. DATABASE_URL names the database (`--embedded`: the embedded
 * development server).
 */
import { parseArgs } from 'node:util';
import { runCli } from '../cli/run.ts';

let values;
try {
  ({ values } = parseArgs({
    options: {
      email: { type: 'string' },
      role: { type: 'string' },
      // Passed on, for the CLI's sentence refusing it.
      password: { type: 'string' },
      'password-prompt': { type: 'boolean' },
      'password-stdin': { type: 'boolean' },
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
    'usage: npm run user:add -- --email someone@example.com --role viewer|operator|admin [--password-prompt | --password-stdin] [--enable] [--embedded]',
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
  ...(values['password-prompt'] ? ['--password-prompt'] : []),
  ...(values['password-stdin'] ? ['--password-stdin'] : []),
  ...(values.enable ? ['--enable'] : []),
  ...(values.embedded ? ['--embedded'] : []),
]);
