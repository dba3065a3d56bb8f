/**
 * `leasehold <command>`: loads `.env` from the working directory, picks the command, prints
 * `--help` and `--version`, and turns the errors a user can fix into one sentence each:
 * bad flags, settings and input exit 2 (nothing written), an unreachable database or a failed
 * migration exit 1. Anything else is a bug: its stack is printed.
 *
 * What an error comes to is its class's (db/errors.ts): a LeaseholdError whose `sentence` is
 * true is printed as its message, and the command exits with its `exitCode`. A command's module
 * (and with it pg, drizzle, the queue) is loaded only when that command runs, so `--version`
 * and `--help` answer at once; the two error modules imported here import nothing else.
 */
import { LeaseholdError } from '../db/errors.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { type Command, type CommandContext, packageVersion } from './command.ts';
import { loadDotEnv } from './env.ts';

interface CommandEntry {
  name: string;
  /** One line for `leasehold --help`. */
  summary: string;
  load: () => Promise<Command>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'migrate',
    summary: 'apply Leasehold’s migrations (--print-sql prints them, --check lists pending ones)',
    load: async () => (await import('./migrate.ts')).migrateCommand,
  },
  {
    name: 'workers',
    summary: 'run a worker process with the handlers a file exports (--handlers <file>)',
    load: async () => (await import('./workers.ts')).workersCommand,
  },
  {
    name: 'dashboard',
    summary: 'serve the dashboard (builds it once per version into ./.leasehold/dashboard)',
    load: async () => (await import('./dashboard.ts')).dashboardCommand,
  },
  {
    name: 'enqueue',
    summary: 'add one job: leasehold enqueue <queue> <kind> <json>; prints its id',
    load: async () => (await import('./enqueue.ts')).enqueueCommand,
  },
  {
    name: 'jobs',
    summary: 'list the newest jobs as a short table (--state, --queue, --kind, --limit)',
    load: async () => (await import('./jobs.ts')).jobsCommand,
  },
  {
    name: 'limits',
    summary: 'list the concurrency limits, or set or clear a run-time value (audited)',
    load: async () => (await import('./limits.ts')).limitsCommand,
  },
  {
    name: 'groups',
    summary: "list a queue's fair groups, or set a group maximum, pause or resume one (audited)",
    load: async () => (await import('./groups.ts')).groupsCommand,
  },
  {
    name: 'schedules',
    summary: 'list recurring jobs and their ticks, or create, change, pause, resume, reset or delete one (audited)',
    load: async () => (await import('./schedules.ts')).schedulesCommand,
  },
  {
    name: 'health',
    summary: 'PostgreSQL health (what holds the xmin horizon, dead rows, autovacuum) and backlog alerts; exit 0/1/2',
    load: async () => (await import('./health.ts')).healthCommand,
  },
  {
    name: 'users',
    summary: 'add, disable or list the dashboard’s users',
    load: async () => (await import('./users.ts')).usersCommand,
  },
  {
    name: 'search-index',
    summary: 'build the search indexes of the searchable payload paths, drop the ones no longer searchable',
    load: async () => (await import('./search-index.ts')).searchIndexCommand,
  },
];

export function versionLine(version: string): string {
  return `leasehold ${version} (Node.js ${process.version})`;
}

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: leasehold <command> [options]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'every command takes --help; --version prints the versions of leasehold and Node.js.',
    'Settings come from the environment and from .env in the current folder (the environment wins).',
    'DATABASE_URL names the PostgreSQL; docs/cli.md has the whole story.',
  ].join('\n');
}

/** The flags before a `--`, where `--help` and `--version` count. */
const flagsOf = (args: string[]) => {
  const end = args.indexOf('--');
  return end === -1 ? args : args.slice(0, end);
};

export async function runCli(argv: string[], cwd: string = process.cwd()): Promise<number> {
  const [name, ...args] = argv;
  const context: CommandContext = { env: process.env, cwd, version: packageVersion() };
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(mainHelp());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v' || flagsOf(args).includes('--version')) {
    console.log(versionLine(context.version));
    return 0;
  }
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry) {
    console.error(
      `leasehold: no command ${JSON.stringify(name)}; the commands are ${COMMANDS.map((c) => c.name).join(', ')} (leasehold --help)`,
    );
    return 2;
  }
  const command = await entry.load();
  if (flagsOf(args).some((a) => a === '--help' || a === '-h')) {
    console.log(command.help);
    return 0;
  }
  const say = (line: string) => console.error(`leasehold ${command.name}: ${line}`);
  try {
    loadDotEnv(cwd);
    return await command.run(args, context);
  } catch (error) {
    if (error instanceof LeaseholdError && error.sentence) {
      // The queue's own refusal names the operation (`Leasehold enqueue: invalid input: …`): the
      // command's name says it here. Its subclasses (UsageError) are one sentence of their own.
      say(
        error instanceof LeaseholdInputError && error.code === 'invalid_input'
          ? `invalid input: ${error.problems.join('; ')}`
          : error.message,
      );
      return error.exitCode;
    }
    const { connectionFailureSentence } = await import('./database-url.ts');
    const connection = connectionFailureSentence(error, context.env.DATABASE_URL ?? '');
    if (connection) {
      say(connection);
      return 1;
    }
    say(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 1;
  }
}
