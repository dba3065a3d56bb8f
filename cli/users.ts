/** `leasehold users add|disable|list`: the dashboard's users (db/users.ts). */
import { randomBytes } from 'node:crypto';
import { ROLES } from '../db/schema.ts';
import { addUser, DEMO_PASSWORD, disableUser, listUsers, userInputSchema } from '../db/users.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, UsageError } from './command.ts';
import { withDb } from './database.ts';
import { passwordFromPrompt, passwordFromStdin } from './password-input.ts';

const HELP = `usage: leasehold users add <email> --role ROLE [--password-prompt | --password-stdin] [--enable]
       leasehold users disable <email>
       leasehold users list

The people who may sign in to the dashboard (leasehold dashboard), with a role:
${ROLES.join(' < ')} (viewers look, operators retry and cancel, admins also reveal masked fields).

  add       creates the user, or changes an existing user's role and password (which
            ends their sessions). The password is never an argument (other users of the
            machine could read it in ps): type it at a prompt, or pipe it in. Without
            either, one is generated and printed once.
            A disabled user stays disabled (nothing is changed) unless --enable is given.
  disable   the user can no longer sign in, and their sessions end (the row stays, for
            the audit log)
  list      every user: email, role, disabled

  --role ROLE           ${ROLES.join(', ')} (add)
  --password-prompt     type the password at a prompt, not shown, twice (add; needs a terminal)
  --password-stdin      read the password from standard input, its first line (add):
                        printf '%s\\n' "$PASSWORD" | leasehold users add … --password-stdin
                        Passwords have at least 10 characters; default: generated.
  --enable              enable a disabled user again (add)
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  role: { type: 'string' },
  // Refused with a sentence (below): kept so the old form says what to use instead.
  password: { type: 'string' },
  'password-prompt': { type: 'boolean' },
  'password-stdin': { type: 'boolean' },
  enable: { type: 'boolean' },
  embedded: { type: 'boolean' },
} as const;

export const usersCommand: Command = {
  name: 'users',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('users', args, OPTIONS, true);
    const [action, email, ...extra] = positionals;
    const embedded = values.embedded === true;
    const usage = (why: string) => new UsageError(`${why} (leasehold users --help)`);
    if (extra.length > 0) throw usage(`unexpected argument ${JSON.stringify(extra[0])}`);
    const prompt = values['password-prompt'] === true;
    const stdin = values['password-stdin'] === true;
    if (values.password !== undefined)
      throw usage(
        '--password no longer takes the password on the command line, where other users of this machine can read it (ps, shell history); nothing was changed. Type it at a prompt with --password-prompt, or pipe it in with --password-stdin',
      );
    if (action !== 'add' && (values.role !== undefined || prompt || stdin || values.enable))
      throw usage('--role, --password-prompt, --password-stdin and --enable go with users add');
    if (prompt && stdin) throw usage('--password-prompt and --password-stdin: choose one');

    if (action === 'add') {
      if (!email) throw usage('users add needs an email: leasehold users add someone@example.com --role viewer');
      if (!values.role) throw usage(`users add needs --role: one of ${ROLES.join(', ')}`);
      const demo = context.env.LEASEHOLD_DEMO === 'true' || context.env.LEASEHOLD_DEMO === '1';
      const source = prompt ? '--password-prompt' : stdin ? '--password-stdin' : null;
      const names: Record<string, string> = { email: '<email>', role: '--role', password: source ?? 'password' };
      const refuse = (issues: readonly { path: readonly PropertyKey[]; message: string }[]) =>
        new UsageError(issues.map((i) => `${names[String(i.path[0])] ?? String(i.path[0])}: ${i.message}`).join('; '));
      // The email and role first: nobody types a password for a command that would refuse them.
      const named = userInputSchema.pick({ email: true, role: true }).safeParse({ email, role: values.role });
      if (!named.success) throw refuse(named.error.issues);
      const address = email.trim().toLowerCase();
      const given = prompt ? await passwordFromPrompt(address) : stdin ? await passwordFromStdin() : null;
      if (given === DEMO_PASSWORD && !demo)
        throw new UsageError(`${source}: that is the demo password; choose another (it is refused outside demo mode)`);
      const password = given ?? randomBytes(12).toString('base64url');
      const checked = userInputSchema.safeParse({ email, role: values.role, password });
      if (!checked.success) throw refuse(checked.error.issues);
      const result = await withDb(context, embedded, ({ db }) =>
        addUser(db, { email, role: values.role as 'viewer', password }, { enable: values.enable === true }),
      );
      const who = `${email.trim().toLowerCase()} (${values.role})`;
      if (result.outcome === 'disabled') {
        console.error(
          `leasehold users: ${email.trim().toLowerCase()} is disabled; nothing was changed. To enable them again: leasehold users add ${email.trim().toLowerCase()} --role ${values.role} --enable`,
        );
        return 2;
      }
      const done = { created: 'created', updated: 'updated', enabled: 'enabled again and updated' }[result.outcome];
      console.log(`${done} ${who}${given !== null ? '' : `; password: ${password}`}`);
      return 0;
    }
    if (action === 'disable') {
      if (!email) throw usage('users disable needs an email');
      const { outcome } = await withDb(context, embedded, ({ db }) => disableUser(db, email));
      const who = email.trim().toLowerCase();
      if (outcome === 'not_found') {
        console.error(`leasehold users: no user ${who}; nothing was changed`);
        return 2;
      }
      console.log(outcome === 'disabled' ? `disabled ${who}` : `${who} was disabled already`);
      return 0;
    }
    if (action === 'list') {
      if (email) throw usage(`users list takes no argument, got ${JSON.stringify(email)}`);
      const users = await withDb(context, embedded, ({ db }) => listUsers(db));
      if (users.length === 0) {
        console.log('no users yet: leasehold users add someone@example.com --role admin');
        return 0;
      }
      const width = Math.max(5, ...users.map((u) => u.email.length));
      console.log(`${'EMAIL'.padEnd(width)}  ROLE      STATUS`);
      for (const u of users)
        console.log(`${u.email.padEnd(width)}  ${u.role.padEnd(8)}  ${u.disabled ? 'disabled' : 'active'}`);
      return 0;
    }
    throw usage(
      action
        ? `no users action ${JSON.stringify(action)}; use add, disable or list`
        : 'name an action: add, disable or list',
    );
  },
};
