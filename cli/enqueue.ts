/** `leasehold enqueue <queue> <kind> <json>`: adds one job (db/queue enqueue) and prints its id. */
import { registeredVersions } from '../db/queries/kinds.ts';
import { prepareSpecs } from '../db/queue/enqueue-spec.ts';
import { enqueue, LeaseholdInputError } from '../db/queue/index.ts';
import { DEFAULT_MAX_ATTEMPTS } from '../db/schema.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, UsageError, wholeNumber } from './command.ts';
import { withDb } from './database.ts';

const HELP = `usage: leasehold enqueue <queue> <kind> <json> [options]

Adds one job of <kind> to <queue> with the JSON payload <json> (quote it for your shell:
'{"orderId": 42}') and prints the job's id. Bad JSON or a bad option writes nothing.

The payload is NOT checked against the kind's schema here (this command has no handler code):
a payload the handler's schema refuses is stored, and its first attempt fails as permanent.
A kind version no worker has registered (the kinds registry) is refused, since a job of it
would wait for a worker and end dead after the unknown-kind grace period; --force adds it
anyway (a worker that runs it may not have started yet).

  --idempotency-key KEY   a repeat with the same key adds nothing and prints the first job's id
  --run-at TIME           earliest start, an ISO 8601 time (2026-12-01T09:00:00Z)
  --delay-ms N            earliest start, N ms from now (not with --run-at)
  --priority N            higher runs first (default 0)
  --max-attempts N        attempts before it is dead (default ${DEFAULT_MAX_ATTEMPTS})
  --kind-version N        the payload's kind version (default 1)
  --force                 add it even if no worker has registered <kind> at that version
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  'idempotency-key': { type: 'string' },
  'run-at': { type: 'string' },
  'delay-ms': { type: 'string' },
  priority: { type: 'string' },
  'max-attempts': { type: 'string' },
  'kind-version': { type: 'string' },
  force: { type: 'boolean' },
  embedded: { type: 'boolean' },
} as const;

/** A whole number (its bounds are the enqueue's to check), or a UsageError naming the flag. */
function integer(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value.trim()))
    throw new UsageError(`--${flag} must be a whole number, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** The enqueue's field names as this command's arguments, for its problems. */
const ARGUMENT_OF: Record<string, string> = {
  queue: '<queue>',
  kind: '<kind>',
  payload: '<json>',
  idempotencyKey: '--idempotency-key',
  runAt: '--run-at',
  delayMs: '--delay-ms',
  priority: '--priority',
  maxAttempts: '--max-attempts',
  kindVersion: '--kind-version',
};

export const enqueueCommand: Command = {
  name: 'enqueue',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('enqueue', args, OPTIONS, true);
    if (positionals.length !== 3)
      throw new UsageError(
        `expected <queue> <kind> <json>, got ${positionals.length} argument${positionals.length === 1 ? '' : 's'} (leasehold enqueue --help)`,
      );
    const [queue, kind, json] = positionals as [string, string, string];
    let payload: unknown;
    try {
      payload = JSON.parse(json);
    } catch (error) {
      throw new UsageError(
        `the payload <json> is not JSON (${error instanceof Error ? error.message : String(error)}): ${json.length > 80 ? `${json.slice(0, 80)}…` : json}`,
      );
    }
    let runAt: Date | undefined;
    if (values['run-at'] !== undefined) {
      runAt = new Date(values['run-at']);
      if (!/^\d{4}-\d{2}-\d{2}/.test(values['run-at']) || Number.isNaN(runAt.getTime()))
        throw new UsageError(
          `--run-at must be an ISO 8601 time such as 2026-12-01T09:00:00Z, not ${JSON.stringify(values['run-at'])}`,
        );
    }
    const spec = {
      queue,
      kind,
      payload,
      idempotencyKey: values['idempotency-key'],
      runAt,
      delayMs: wholeNumber('delay-ms', values['delay-ms'], 0, Number.MAX_SAFE_INTEGER),
      priority: integer('priority', values.priority),
      maxAttempts: integer('max-attempts', values['max-attempts']),
      kindVersion: integer('kind-version', values['kind-version']),
    };
    const result = await withDb(context, values.embedded === true, async ({ db }) => {
      if (values.force !== true) {
        // Bad input is named first (as the enqueue would), before the registry is asked.
        prepareSpecs('enqueue', [spec]);
        const version = spec.kindVersion ?? 1;
        const versions = await registeredVersions(db, kind);
        if (!versions.includes(version))
          throw new UsageError(
            `no worker has registered ${kind} v${version} (${
              versions.length === 0 ? 'the kinds registry has no version of it' : `registered: v${versions.join(', v')}`
            }): the job would wait and end dead unless a worker that runs it starts. Check <kind> and --kind-version, or pass --force to add it anyway; nothing was added`,
          );
      }
      return enqueue(db, spec);
    }).catch((error: unknown) => {
      // The queue's refusal, in the command's words; a UsageError (one of its subclasses) is already.
      if (error instanceof LeaseholdInputError && !(error instanceof UsageError))
        throw new UsageError(
          `invalid input: ${error.problems.map((p) => p.replace(/^(\w+)(?=[.:[])/, (f) => ARGUMENT_OF[f] ?? f)).join('; ')}`,
        );
      throw error;
    });
    console.log(result.id);
    if (!result.created)
      console.error(
        `leasehold enqueue: a job with this idempotency key exists already; nothing was added (its id is above)`,
      );
    return 0;
  },
};
