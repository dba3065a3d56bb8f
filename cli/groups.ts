/** `leasehold groups <queue> | set | clear | pause | resume`: a queue's fair groups (db/queue/group-limits.ts, docs/flow-control.md). */
import { listGroups, MAX_GROUP_LIMIT, pauseGroup, resumeGroup, setGroupLimit } from '../db/queue/index.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';

const HELP = `usage: leasehold groups <queue> [--top N]
       leasehold groups set <queue> [<group>] <max> --actor WHO [--reason TEXT]
       leasehold groups clear <queue> [<group>] --actor WHO [--reason TEXT]
       leasehold groups pause <queue> <group> --actor WHO [--reason TEXT]
       leasehold groups resume <queue> <group> --actor WHO [--reason TEXT]

A queue's fair groups (a job's group: a tenant, an account): they take turns, and each may
have a maximum of jobs running at once, across every worker process (docs/flow-control.md,
"Per-group limits").

  <queue>  the groups with work or limits, the first N (default 50) by their oldest waiting
           job: waiting and running jobs, that age, the maximum in force, paused or not;
           the rest summed as other
  set      the queue's default maximum for every group (no <group>), or one group's own,
           which wins over the default: 1 to ${MAX_GROUP_LIMIT.toLocaleString('en')} running at once, from the queue's
           next claim on; audited (set_group_limit). Refused while a live worker runs code
           older than per-group limits (named)
  clear    drop the default maximum, or one group's own (the default applies again)
  pause    no worker starts a job of the group until it is resumed (audited: pause_group)
  resume   the group's jobs start again (audited: resume_group)

  --top N             how many groups to list by name (1 to 1000)
  --actor WHO         who makes the change, for the audit log (an email, a name)
  --reason TEXT       why, for the audit log
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  actor: { type: 'string' },
  reason: { type: 'string' },
  top: { type: 'string' },
  embedded: { type: 'boolean' },
} as const;

const ACTIONS = ['set', 'clear', 'pause', 'resume'] as const;
type Action = (typeof ACTIONS)[number];
const ACTION_NAMES = new Set<string>(ACTIONS);
const isAction = (a: string): a is Action => ACTION_NAMES.has(a);

const age = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)}s`);
const shown = (n: number | null) => (n === null ? '-' : String(n));

export const groupsCommand: Command = {
  name: 'groups',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('groups', args, OPTIONS, true);
    const [first, ...rest] = positionals;
    const embedded = values.embedded === true;
    const usage = (why: string) => new UsageError(`${why} (leasehold groups --help)`);
    if (first === undefined) throw usage('groups needs a queue, or set, clear, pause or resume');
    if (!isAction(first)) {
      if (rest.length > 0) throw usage(`unexpected argument ${JSON.stringify(rest[0])}`);
      const top = values.top === undefined ? 50 : Number(values.top);
      if (!Number.isInteger(top) || top < 1 || top > 1000)
        throw usage(`--top must be a whole number from 1 to 1000, not ${JSON.stringify(values.top)}`);
      const listed = await withDb(context, embedded, ({ db }) => listGroups(db, { queue: first, top }));
      console.log(`queue ${listed.queue}: default maximum per group ${shown(listed.defaultMax)}`);
      const rows = listed.groups.map((g) => [
        g.group,
        String(g.waiting),
        String(g.running),
        age(g.oldestWaitingMs),
        shown(g.max),
        g.paused ? 'yes' : 'no',
      ]);
      const other = listed.other
        ? [
            [
              `(other: ${listed.other.groups})`,
              String(listed.other.waiting),
              String(listed.other.running),
              age(listed.other.oldestWaitingMs),
              '-',
              '-',
            ],
          ]
        : [];
      console.log(
        rows.length === 0 && other.length === 0
          ? 'no groups: no job of this queue names a group, and no group has a limit'
          : textTable([['GROUP', 'WAITING', 'RUNNING', 'OLDEST WAITING', 'MAX', 'PAUSED'], ...rows, ...other]),
      );
      return 0;
    }
    if (values.top !== undefined) throw usage(`${first} takes no --top`);
    const [queue, ...more] = rest;
    if (queue === undefined) throw usage(`${first} needs the queue's name`);
    if (values.actor === undefined) throw usage(`${first} needs --actor (who makes the change, for the audit log)`);
    const who = { actor: values.actor, ...(values.reason === undefined ? {} : { reason: values.reason }) };
    let group: string | undefined;
    let max: number | null = null;
    if (first === 'set') {
      const given = more.at(-1);
      if (given === undefined || more.length > 2) throw usage('set needs [<group>] <max>');
      if (!/^\d+$/.test(given) || Number(given) < 1 || Number(given) > MAX_GROUP_LIMIT)
        throw usage(`<max> must be a whole number from 1 to ${MAX_GROUP_LIMIT}, not ${JSON.stringify(given)}`);
      max = Number(given);
      group = more.length === 2 ? more[0] : undefined;
    } else {
      if (more.length > 1) throw usage(`unexpected argument ${JSON.stringify(more[1])}`);
      group = more[0];
      if (first !== 'clear' && group === undefined) throw usage(`${first} needs the group`);
    }
    const outcome = await withDb(context, embedded, ({ db }) => {
      if (first === 'pause' || first === 'resume')
        return (first === 'pause' ? pauseGroup : resumeGroup)(db, { queue, group: group!, ...who });
      return setGroupLimit(db, { queue, ...(group === undefined ? {} : { group }), max, ...who });
    });
    const what = group === undefined ? `queue ${queue}'s default per group` : `group ${group} of queue ${queue}`;
    console.log(
      first === 'pause' || first === 'resume'
        ? `${what}: ${outcome.after.paused ? 'paused' : 'resumed'} (was ${outcome.before.paused ? 'paused' : 'running'}; audit ${outcome.auditId})`
        : `${what}: maximum ${shown(outcome.after.max)} (was ${shown(outcome.before.max)}; audit ${outcome.auditId})`,
    );
    return 0;
  },
};
