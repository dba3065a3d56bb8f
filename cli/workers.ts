/** `leasehold workers --handlers <file>`: a worker process (workers/run-process.ts) serving the handlers that file exports. */
import { checkedDatabaseUrl } from './database-url.ts';
import { workerSettingsHelp } from '../workers/config.ts';
import { runWorkerProcess } from '../workers/run-process.ts';
import { type Command, EMBEDDED_HELP } from './command.ts';
import { commandDatabase } from './database.ts';

const HELP = `usage: leasehold workers --handlers <file>[,<file>…] [options]

Runs one worker process on the database DATABASE_URL names: it claims the jobs of its queues
and runs them with the handlers the files export. A handlers file exports \`handlers\` (an
array) or a default handler (or array); relative paths are from the current folder. Nothing
else is loaded. SIGTERM or Ctrl-C stops it gracefully (a second one exits at once).

A file that does not load, that exports no handler, or two handlers for one kind stop start-up
with a sentence naming the file and the kind (exit code 2), before anything is written.

settings (flags win over variables):
${workerSettingsHelp()}
${EMBEDDED_HELP} (migrated at start)
  --help, --version

environment: DATABASE_URL (required unless --embedded). Operations: docs/operations.md.`;

export const workersCommand: Command = {
  name: 'workers',
  help: HELP,
  async run(args, context) {
    const embedded = args.includes('--embedded');
    const rest = args.filter((a) => a !== '--embedded');
    const url = context.env.DATABASE_URL?.trim();
    if (url) checkedDatabaseUrl(url);
    else if (!embedded) await commandDatabase(context, false); // throws the sentence naming DATABASE_URL
    let stopEmbedded: (() => Promise<void>) | undefined;
    const code = await runWorkerProcess(rest, context.env, {
      cwd: context.cwd,
      version: context.version,
      embeddedHint: 'pass --embedded',
      fallbackDatabase: embedded
        ? async () => {
            const database = await commandDatabase(context, true);
            stopEmbedded = () => database.stop();
            return { url: database.url, migrate: true };
          }
        : undefined,
      report: (line) => console.error(`leasehold workers: ${line}`),
    });
    await stopEmbedded?.();
    return code;
  },
};
