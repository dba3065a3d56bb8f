/** `leasehold limits [list] | set | clear`: the concurrency limits (db/queue/limits.ts, docs/flow-control.md). */
import { listLimits, MAX_LIMIT, setLimit } from '../db/queue/index.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';

const HELP = `usage: leasehold limits [list]
       leasehold limits set <kind|resource> <name> <max> --actor WHO [--reason TEXT]
       leasehold limits clear <kind|resource> <name> --actor WHO [--reason TEXT]

The concurrency limits the handlers declare (limit: { max } or { resource, max }): at most MAX
attempts of a kind, or of every kind naming a resource, hold a lease at once across every
worker process (docs/flow-control.md).

  list    every limit: its key, what the handlers declare, the run-time value, what the
          claims enforce, and how many attempts run under it now
  set     a run-time maximum (1 to ${MAX_LIMIT.toLocaleString('en')}) that wins over the declaration, from the next
          claim on; audited (set_limit) with --actor and --reason. Refused for a limit no
          handler declares, and while a live worker runs code older than limits (named)
  clear   drop the run-time value: the declaration applies again (audited)

  --actor WHO     who makes the change, for the audit log (an email, a name)
  --reason TEXT   why, for the audit log
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  actor: { type: 'string' },
  reason: { type: 'string' },
  embedded: { type: 'boolean' },
} as const;

const SCOPES = ['kind', 'resource'] as const;

export const limitsCommand: Command = {
  name: 'limits',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('limits', args, OPTIONS, true);
    const [action = 'list', scope, name, max, ...extra] = positionals;
    const embedded = values.embedded === true;
    const usage = (why: string) => new UsageError(`${why} (leasehold limits --help)`);
    if (action === 'list') {
      if (scope !== undefined) throw usage(`unexpected argument ${JSON.stringify(scope)}`);
      const limits = await withDb(context, embedded, ({ db }) => listLimits(db));
      if (limits.length === 0) {
        console.log('no limits: a handler declares one with limit: { max } or { resource, max }');
        return 0;
      }
      const shown = (n: number | null) => (n === null ? '-' : String(n));
      console.log(
        textTable([
          ['LIMIT', 'DECLARED', 'SET', 'ENFORCED', 'RUNNING', 'SET BY'],
          ...limits.map((l) => [
            l.key,
            shown(l.declaredMax),
            shown(l.setMax),
            shown(l.max),
            String(l.running),
            l.setBy ?? '-',
          ]),
        ]),
      );
      return 0;
    }
    if (action !== 'set' && action !== 'clear') throw usage(`no action ${JSON.stringify(action)}: list, set or clear`);
    if (!SCOPES.includes(scope as (typeof SCOPES)[number]))
      throw usage(`${action} needs kind or resource first, not ${JSON.stringify(scope ?? '')}`);
    if (name === undefined) throw usage(`${action} needs the ${scope}'s name`);
    const extraArgs = action === 'clear' ? [max, ...extra] : extra;
    const unexpected = extraArgs.find((a) => a !== undefined);
    if (unexpected !== undefined) throw usage(`unexpected argument ${JSON.stringify(unexpected)}`);
    if (values.actor === undefined) throw usage(`${action} needs --actor (who makes the change, for the audit log)`);
    let newMax: number | null = null;
    if (action === 'set') {
      if (max === undefined) throw usage('set needs <max>, a whole number');
      newMax = Number(max);
      if (!/^\d+$/.test(max) || newMax < 1 || newMax > MAX_LIMIT)
        throw usage(`<max> must be a whole number from 1 to ${MAX_LIMIT}, not ${JSON.stringify(max)}`);
    }
    const outcome = await withDb(context, embedded, ({ db }) =>
      setLimit(db, {
        scope: scope as (typeof SCOPES)[number],
        name,
        max: newMax,
        actor: values.actor!,
        ...(values.reason === undefined ? {} : { reason: values.reason }),
      }),
    );
    const was = outcome.before === null ? 'none' : String(outcome.before);
    console.log(
      `${scope}:${name}: run-time limit ${outcome.after === null ? 'cleared' : `set to ${outcome.after}`} (was ${was}; audit ${outcome.auditId})`,
    );
    return 0;
  },
};
