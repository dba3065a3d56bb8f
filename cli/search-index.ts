/** `leasehold search-index`: builds the search indexes of the searchable payload paths (db/migrate/search-indexes.ts). */
import { buildSearchIndexes, type SearchIndexResult } from '../db/migrate/index.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, wholeNumber } from './command.ts';
import { commandDatabase } from './database.ts';

const HELP = `usage: leasehold search-index [options]

Builds, for every searchable payload path of a kind (declared by its handlers' \`searchable\`,
or added by an admin on the dashboard's Kinds page), the index the dashboard's search uses:
CREATE INDEX CONCURRENTLY on that kind's jobs alone. Rebuilds an index a failed build left
invalid, and drops the indexes of paths no longer searchable (DROP INDEX CONCURRENTLY). Run it
as the role that migrates (the table's owner), on a direct connection; \`leasehold migrate\` runs
it too. Writes are not blocked while it builds; one run at a time (the migration lock).

  --allow-proxy         skip the direct-connection check (a tunnel or port mapping, never a pooler)
  --lock-timeout-ms N   lock_timeout of every statement (default 5000)
  --lock-wait-ms N      how long to wait for the migration lock another session holds (default 30000)
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  'allow-proxy': { type: 'boolean' },
  'lock-timeout-ms': { type: 'string' },
  'lock-wait-ms': { type: 'string' },
  embedded: { type: 'boolean' },
} as const;

/** What a run did, in one line. */
export function searchIndexLine(r: SearchIndexResult): string {
  const total = r.created.length + r.rebuilt.length + r.ready.length;
  if (total === 0 && r.dropped.length === 0) return 'search indexes: no searchable paths declared';
  return (
    `search indexes: ${total} ready (${r.created.length} built, ${r.rebuilt.length} rebuilt), ` +
    `${r.dropped.length} dropped`
  );
}

export const searchIndexCommand: Command = {
  name: 'search-index',
  help: HELP,
  async run(args, context) {
    const { values } = parseCommandArgs('search-index', args, OPTIONS);
    const lockTimeoutMs = wholeNumber('lock-timeout-ms', values['lock-timeout-ms'], 0, 3_600_000);
    const lockWaitMs = wholeNumber('lock-wait-ms', values['lock-wait-ms'], 0, 86_400_000);
    const database = await commandDatabase(context, values.embedded === true);
    try {
      const result = await buildSearchIndexes(database.url, {
        ...(lockTimeoutMs !== undefined ? { lockTimeoutMs } : {}),
        ...(lockWaitMs !== undefined ? { lockWaitMs } : {}),
        allowProxy: values['allow-proxy'] === true,
        log: (line) => console.error(`leasehold search-index: ${line}`),
      });
      console.log(searchIndexLine(result));
      return 0;
    } finally {
      await database.stop();
    }
  },
};
