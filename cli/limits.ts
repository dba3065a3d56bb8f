/** `leasehold limits [list] | set | clear`: the concurrency and rate limits (db/queue/limits.ts, docs/flow-control.md). */
import { type LimitRate, type LimitValues, listLimits, MAX_LIMIT, setLimit } from '../db/queue/index.ts';
import { parseRate, rateText } from '../db/queue/limit-rate.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';
import { systemTimeZone, whenText } from '../lib/time-format.ts';

const HELP = `usage: leasehold limits [list]
       leasehold limits set <queue|kind|resource> <name> [<max>] [--rate N/INTERVAL] --actor WHO [--reason TEXT]
       leasehold limits clear <queue|kind|resource> <name> [max|rate] --actor WHO [--reason TEXT]
       leasehold limits resume <queue|kind|resource> <name> --actor WHO [--reason TEXT]

The limits the handlers declare (limit: { max }, { rate }, or with a resource several kinds
share) and the workers' queue limits: at most MAX attempts hold a lease at once, and at most N
start in any INTERVAL, across every worker process (docs/flow-control.md).

  list    every limit: its key, what the handlers declare, the run-time values, what the
          claims enforce, what runs and waits under it now, and whether it is paused
  set     a run-time maximum (1 to ${MAX_LIMIT.toLocaleString('en')}) and/or rate (--rate 100/1s: 1 to
          ${MAX_LIMIT.toLocaleString('en')} starts per 1ms to 24h) that win over the declaration, from the next
          claim on; audited (set_limit) with --actor and --reason. Refused for a limit no
          handler declares, and while a live worker runs code older than limits (named)
  clear   drop the run-time values (only the maximum or the rate, if named): the declaration
          applies again (audited)
  resume  lift the pause a handler's RateLimitedError put on the limit (audited)

  --rate N/INTERVAL   N starts per INTERVAL: 500ms, 1s, 10s, 1m, 1h (or plain milliseconds)
  --actor WHO         who makes the change, for the audit log (an email, a name)
  --reason TEXT       why, for the audit log
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  actor: { type: 'string' },
  reason: { type: 'string' },
  rate: { type: 'string' },
  embedded: { type: 'boolean' },
} as const;

const SCOPES = ['queue', 'kind', 'resource'] as const;

const valuesText = (v: LimitValues) =>
  v.max === null && v.rate === null
    ? 'none'
    : [v.max === null ? null : `max ${v.max}`, v.rate === null ? null : `rate ${rateText(v.rate)}`]
        .filter(Boolean)
        .join(', ');

export const limitsCommand: Command = {
  name: 'limits',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('limits', args, OPTIONS, true);
    const [action = 'list', scope, name, third, ...extra] = positionals;
    const embedded = values.embedded === true;
    const usage = (why: string) => new UsageError(`${why} (leasehold limits --help)`);
    if (action === 'list') {
      if (scope !== undefined) throw usage(`unexpected argument ${JSON.stringify(scope)}`);
      const limits = await withDb(context, embedded, ({ db }) => listLimits(db));
      if (limits.length === 0) {
        console.log('no limits: a handler declares one with limit: { max }, { rate } or { resource, max }');
        return 0;
      }
      const shown = (n: number | null) => (n === null ? '-' : String(n));
      console.log(
        textTable([
          ['LIMIT', 'DECLARED', 'SET', 'ENFORCED', 'RATE', 'RUNNING', 'WAITING', 'PAUSED UNTIL', 'SET BY'],
          ...limits.map((l) => [
            l.key,
            shown(l.declared.max),
            shown(l.set.max),
            shown(l.max),
            rateText(l.rate),
            String(l.running),
            String(l.waiting),
            whenText(l.pausedUntil, systemTimeZone(), Date.now()),
            l.setBy ?? '-',
          ]),
        ]),
      );
      return 0;
    }
    if (action !== 'set' && action !== 'clear' && action !== 'resume')
      throw usage(`no action ${JSON.stringify(action)}: list, set, clear or resume`);
    if (!SCOPES.includes(scope as (typeof SCOPES)[number]))
      throw usage(`${action} needs queue, kind or resource first, not ${JSON.stringify(scope ?? '')}`);
    if (name === undefined) throw usage(`${action} needs the ${scope}'s name`);
    const unexpected = extra.find((a) => a !== undefined);
    if (unexpected !== undefined) throw usage(`unexpected argument ${JSON.stringify(unexpected)}`);
    if (values.actor === undefined) throw usage(`${action} needs --actor (who makes the change, for the audit log)`);
    const change: { max?: number | null; rate?: LimitRate | null; resume?: true } = {};
    if (action === 'resume') {
      if (third !== undefined) throw usage(`unexpected argument ${JSON.stringify(third)}`);
      if (values.rate !== undefined) throw usage('resume takes no --rate');
      change.resume = true;
    } else if (action === 'set') {
      if (third !== undefined) {
        const newMax = Number(third);
        if (!/^\d+$/.test(third) || newMax < 1 || newMax > MAX_LIMIT)
          throw usage(`<max> must be a whole number from 1 to ${MAX_LIMIT}, not ${JSON.stringify(third)}`);
        change.max = newMax;
      }
      if (values.rate !== undefined) {
        const rate = parseRate(values.rate, '--rate');
        if (typeof rate === 'string') throw usage(rate);
        change.rate = rate;
      }
      if (change.max === undefined && change.rate === undefined)
        throw usage('set needs <max>, a whole number, or --rate N/INTERVAL');
    } else {
      if (third !== undefined && third !== 'max' && third !== 'rate')
        throw usage(`clear takes max or rate after the name, not ${JSON.stringify(third)}`);
      if (values.rate !== undefined) throw usage('clear takes no --rate: name max or rate to clear only one');
      if (third !== 'rate') change.max = null;
      if (third !== 'max') change.rate = null;
    }
    const outcome = await withDb(context, embedded, ({ db }) =>
      setLimit(db, {
        scope: scope as (typeof SCOPES)[number],
        name,
        ...change,
        actor: values.actor!,
        ...(values.reason === undefined ? {} : { reason: values.reason }),
      }),
    );
    console.log(
      action === 'resume'
        ? `${scope}:${name}: pause lifted${outcome.pausedBefore ? ` (it ran until ${whenText(outcome.pausedBefore, systemTimeZone(), Date.now())})` : ' (it was not paused)'}; audit ${outcome.auditId}`
        : `${scope}:${name}: run-time ${action === 'clear' ? 'values cleared' : 'values set'}: ${valuesText(outcome.after)} (was ${valuesText(outcome.before)}; audit ${outcome.auditId})`,
    );
    return 0;
  },
};
